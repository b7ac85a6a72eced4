"""``capsule mcp --embedded`` as a subprocess, driven by the MCP SDK's own stdio client."""

from __future__ import annotations

import json

import anyio
from mcp import Client
from mcp_support import ToolSession, mcp_params, new_data_dir

MEMORY_TOOLS = {
    "memory_store",
    "memory_ingest",
    "memory_search",
    "memory_list",
    "memory_pin",
    "memory_forget",
    "memory_feedback",
    "memory_projects",
}
PROJECT = "shop"


def run_session(tmp_path, body, *args: str):
    async def main():
        params = mcp_params(new_data_dir(tmp_path), "--embedded", "--project", PROJECT, *args)
        async with Client(params) as client:
            await body(ToolSession(client), client)

    anyio.run(main)


def test_tools_are_listed_with_schemas_and_descriptions(tmp_path):
    async def body(session, client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert MEMORY_TOOLS <= set(tools)
        for tool in tools.values():
            assert len(tool.description or "") > 40, tool.name  # for an agent, and short: every conversation pays
            assert tool.input_schema["type"] == "object"
            # No output schemas: they were most of tools/list's size, and a client that sees one demands
            # structured content from answers that, for a Vector Bridge caller, are one text item.
            assert tool.output_schema is None, tool.name
        search = tools["memory_search"].input_schema["properties"]
        assert search["k"]["minimum"] == 1 and search["k"]["maximum"] == 20
        assert search["mode"]["enum"] == ["hybrid", "vector", "bm25"]
        assert tools["memory_pin"].input_schema["properties"]["action"]["enum"] == ["pin", "unpin"]
        assert tools["memory_search"].annotations.read_only_hint is True

    run_session(tmp_path, body)


def test_every_memory_tool_works_end_to_end(tmp_path):
    async def body(session, client):
        stored, text = await session.ok(
            "memory_store",
            {
                "content": "Checkout deadlock: use BEGIN IMMEDIATE for every SQLite write",
                "type": "fix",
                "tags": ["sqlite"],
                "outcome": "success",
                "explanation": "cost a day",
            },
        )
        fix_id = stored["memory"]["id"]
        assert fix_id in text and stored["memory"]["meta"]["tags"] == ["sqlite"]
        assert stored["memory"]["project"] == PROJECT  # the server's default project

        again, _ = await session.ok(
            "memory_store", {"content": "Checkout deadlock: use BEGIN IMMEDIATE for every SQLite write"}
        )
        assert again["deduplicated"] is True and again["memory"]["id"] == fix_id

        other, _ = await session.ok("memory_store", {"content": "Fonts: the brand font is Inter", "project": "web"})
        assert other["memory"]["project"] == "web"

        text = "\n\n".join(f"Section {n}. " + " ".join(f"word{n}x{i}" for i in range(120)) for n in range(12))
        ingested, _ = await session.ok("memory_ingest", {"text": text, "path": "docs/guide.md", "tags": ["docs"]})
        assert ingested["chunks"] >= 2 and len(ingested["ids"]) == ingested["chunks"]

        found, text = await session.ok("memory_search", {"query": "sqlite deadlock", "k": 3})
        assert found["results"][0]["id"] == fix_id
        assert fix_id in text and found["results"][0]["components"]["bm25"] > 0

        everywhere, _ = await session.ok("memory_search", {"query": "brand font", "all_projects": True, "k": 3})
        assert everywhere["results"][0]["id"] == other["memory"]["id"]

        # as_of is the search's now: seen from 1990 every memory here is in the future, so brand new
        then, _ = await session.ok(
            "memory_search",
            {"query": "sqlite deadlock", "k": 1, "as_of": "1990-01-01T00:00:00Z", "min_relevance": 0.05},
        )
        assert then["results"][0]["id"] == fix_id and then["results"][0]["components"]["time"] == 1.0
        _, refused, is_error = await session.call("memory_search", {"query": "x", "as_of": "tomorrow-ish"})
        assert is_error and "as_of" in refused

        filtered, _ = await session.ok("memory_search", {"query": "section words", "tags": ["docs"], "k": 20})
        assert filtered["results"] and all("docs" in h["meta"]["tags"] for h in filtered["results"])

        page1, text = await session.ok("memory_list", {"limit": 2})
        assert len(page1["memories"]) == 2 and page1["next_cursor"] and page1["next_cursor"] in text
        page2, _ = await session.ok("memory_list", {"limit": 2, "cursor": page1["next_cursor"]})
        assert not {m["id"] for m in page1["memories"]} & {m["id"] for m in page2["memories"]}

        pinned, _ = await session.ok("memory_pin", {"id": fix_id})
        assert pinned["memory"]["pinned"] is True
        pins, _ = await session.ok("memory_list", {"pinned_only": True})
        assert [m["id"] for m in pins["memories"]] == [fix_id]
        unpinned, _ = await session.ok("memory_pin", {"id": fix_id, "action": "unpin"})
        assert unpinned["memory"]["pinned"] is False

        voted, _ = await session.ok("memory_feedback", {"id": fix_id, "helpful": True, "context": "fixed SHOP-9"})
        assert voted["memory"]["helpful"] == 1
        voted, _ = await session.ok("memory_feedback", {"id": fix_id, "helpful": False})
        assert voted["memory"]["unhelpful"] == 1

        forgotten, text = await session.ok("memory_forget", {"id": fix_id, "reason": "superseded"})
        assert forgotten["memory"]["forgotten_at"] and "superseded" in text
        found, _ = await session.ok("memory_search", {"query": "sqlite deadlock", "k": 20})
        assert fix_id not in {h["id"] for h in found["results"]}

        projects, text = await session.ok("memory_projects")
        assert {p["project"] for p in projects["projects"]} == {PROJECT, "web"}
        assert "shop" in text

    run_session(tmp_path, body)


def test_results_stay_within_the_character_budget(tmp_path):
    async def body(session, client):
        for n in range(8):
            await session.ok("memory_store", {"content": f"Note {n} about caching: " + "cache layer detail " * 150})
        full, _ = await session.ok("memory_search", {"query": "caching", "k": 8, "max_chars": 40000})
        assert len(full["results"]) == 8
        assert full["truncated"]  # each content of ~2900 chars is cut to an excerpt
        assert all(len(h["content"]) <= 1200 for h in full["results"])

        small, text = await session.ok("memory_search", {"query": "caching", "k": 8, "max_chars": 2000})
        assert small["omitted"] > 0 and len(small["results"]) + small["omitted"] == 8
        assert len(json.dumps(small["results"])) <= 2000 + 1300  # one item may overshoot: at least one is shown
        assert "left out" in text

        page, _ = await session.ok("memory_list", {"limit": 8, "max_chars": 2000})
        assert page["omitted"] == 0 and len(page["memories"]) < 8 and page["next_cursor"]
        rest, _ = await session.ok("memory_list", {"limit": 8, "cursor": page["next_cursor"], "max_chars": 40000})
        assert len(page["memories"]) + len(rest["memories"]) == 8  # paging after a cut loses nothing

    run_session(tmp_path, body)


BAD_CALLS = [
    ("memory_pin", {"id": "no-such-id"}, "not_found"),
    ("memory_forget", {"id": "no-such-id"}, "not_found"),
    ("memory_feedback", {"id": "no-such-id", "helpful": True}, "not_found"),
    ("memory_store", {"content": ""}, "content"),
    ("memory_search", {"query": "x", "k": 50}, "k"),
    ("memory_pin", {"id": "x", "action": "nail"}, "action"),
    ("memory_list", {"cursor": "not-a-cursor"}, "cursor"),
    ("memory_store", {"content": "x", "tags": ["a" * 65]}, "tags"),
]


def test_bad_calls_become_tool_errors_with_a_clear_message(tmp_path):
    async def body(session, client):
        for name, arguments, expected in BAD_CALLS:
            structured, text, is_error = await session.call(name, arguments)
            assert is_error and structured is None, (name, arguments)
            assert expected in text and name in text, text
        listed, _ = await session.ok("memory_list")
        assert listed["memories"] == []  # and nothing was changed

    run_session(tmp_path, body)


def test_memory_get_reads_a_long_memory_whole_in_pages_and_restore_brings_one_back(tmp_path):
    content = "".join(f"line {n:05d}: the checkout flow writes with BEGIN IMMEDIATE\n" for n in range(400))

    async def body(session, client):
        stored, _ = await session.ok("memory_store", {"content": content})
        memory_id = stored["memory"]["id"]
        pages, offset = [], 0
        while offset is not None:
            page, text = await session.ok("memory_get", {"id": memory_id, "offset": offset, "max_chars": 5000})
            assert page["total_chars"] == len(content) and page["offset"] == offset
            assert len(page["memory"]["content"]) <= 5000 and page["memory"]["content"] in text
            pages.append(page["memory"]["content"])
            offset = page["next_offset"]
        assert "".join(pages) == content and len(pages) == -(-len(content) // 5000)

        whole, _ = await session.ok("memory_get", {"id": memory_id, "max_chars": 40000})
        assert whole["memory"]["content"] == content and whole["next_offset"] is None

        await session.ok("memory_forget", {"id": memory_id, "reason": "outdated"})
        _, text, is_error = await session.call("memory_get", {"id": memory_id})
        assert is_error and "not_found" in text
        restored, _ = await session.ok("memory_restore", {"id": memory_id})
        assert restored["memory"]["id"] == memory_id and restored["memory"]["forgotten_at"] is None
        found, _ = await session.ok("memory_search", {"query": "checkout BEGIN IMMEDIATE"})
        assert found["results"][0]["id"] == memory_id

    run_session(tmp_path, body)
