"""Every MCP tool refuses what it does not know, over the SDK's stdio client: an unknown argument is
named with the nearest known one, a value of the wrong type is not coerced, the message carries no
pydantic boilerplate, and a refused call changes nothing."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client
from mcp_support import ERROR, FIXPACK, ToolSession, mcp_params, new_data_dir

from capsule import Settings
from mcp_client import vb_dialect
from mcp_client.backends import EmbeddedBackend

PROJECT = "shop"
MEMORY, SOLUTION = "{memory}", "{solution}"  # filled in with the seeded ids

# tool -> (valid arguments, an unknown name with a value, the name it should suggest, a wrongly typed argument)
CASES = {
    "memory_store": ({"content": "x"}, ("tag", ["a"]), "tags", ("pinned", "yes")),
    "memory_ingest": ({"text": "x"}, ("paths", "a.md"), "path", ("tags", "sqlite")),
    "memory_search": ({"query": "x"}, ("modes", "bm25"), "mode", ("k", "5")),
    "memory_list": ({}, ("pinned", True), "pinned_only", ("limit", "2")),
    "memory_get": ({"id": MEMORY}, ("offest", 5), "offset", ("offset", "5")),
    "memory_pin": ({"id": MEMORY}, ("pinned", False), "action", ("action", True)),
    "memory_forget": ({"id": MEMORY}, ("reasons", "old"), "reason", ("reason", 7)),
    "memory_restore": ({"id": MEMORY}, ("ids", MEMORY), "id", ("id", 1.5)),
    "memory_feedback": ({"id": MEMORY, "helpful": True}, ("contexts", "x"), "context", ("helpful", "true")),
    "memory_projects": ({}, ("max_char", 600), "max_chars", ("max_chars", "600")),
    "solution_search": ({"error": ERROR}, ("limits", 3), "limit", ("k", "3")),
    "solution_apply": ({"solution_id": SOLUTION, "success": True}, ("pattern", "x"), "pattern_tag", ("success", "yes")),
    "pattern_detect": ({"error": ERROR}, ("min_scores", 0.5), "min_score", ("k", True)),
    "pattern_solutions": ({"tag": "redis"}, ("categories", "x"), "category", ("k", "5")),
    "pattern_link": (
        {"tag": "redis", "solution_id": SOLUTION, "success": True},
        ("contxt", "x"),
        "context",
        ("success", 1),
    ),
    # {} or only the original's names is a Vector Bridge call (tests/mcp/test_vb_contract.py): ours types k.
    "golden_paths": ({}, ("min_application", 1), "min_applications", ("k", "1")),
    "detect_patterns": ({}, ("min_occurrence", 2), "min_occurrences", ("min_occurrences", 2.5)),
    "memory_update": ({"id": MEMORY, "tags": ["x"]}, ("retension", "permanent"), "retention", ("ttl", "60")),
    "memory_history": ({"id": MEMORY}, ("ids", MEMORY), "id", ("id", 1.5)),
    "memory_revert": ({"id": MEMORY, "version": 1}, ("versions", 1), "version", ("version", "1")),
    "memory_capture": (
        {"events": [{"role": "user", "text": "we chose SQLite"}]},
        ("event", []),
        "events",
        ("auto_approve", "yes"),
    ),
    "memory_candidates": ({}, ("state", "pending"), "status", ("limit", "5")),
    "memory_approve": ({"id": "ab12"}, ("texts", "x"), "text", ("tags", "x")),
    "memory_reject": ({"id": "ab12"}, ("reasons", "x"), "reason", ("reason", 7)),
}
BOILERPLATE = ("pydantic", "For further information", "validation error", "Arguments", "input_value", "type=")


def seed(data_dir) -> dict[str, str]:
    """A memory, a forgotten memory, a solution and a recurring error: something for each tool to change."""
    backend = EmbeddedBackend.from_settings(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        memory = backend.store({"project": PROJECT, "content": "Checkout uses BEGIN IMMEDIATE"}).memory.id
        gone = backend.store({"project": PROJECT, "content": "An outdated note"}).memory.id
        backend.forget(gone, "outdated")
        for n in range(3):
            backend.store(
                {
                    "project": PROJECT,
                    "content": f"{ERROR} (attempt {n})",
                    "meta": {"type": "error", "outcome_status": "failure"},
                }
            )
        solution = backend.learning.create_solution(backend.tenant, FIXPACK).solution.id
    finally:
        backend.close()
    return {MEMORY: memory, SOLUTION: solution, "gone": gone}


def snapshot(data_dir) -> tuple:
    """Everything a tool could have changed."""
    backend = EmbeddedBackend.from_settings(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        memories = backend.list_memories({"project": PROJECT, "limit": 50}).memories
        return (
            [(m.id, m.content, m.pinned, m.helpful, m.unhelpful, m.meta) for m in memories],
            [(p.project, p.memories, p.pinned, p.forgotten) for p in backend.projects().projects],
            [
                (s.id, s.success_count, s.failure_count)
                for s in backend.learning.list_solutions(backend.tenant).solutions
            ],
            [m.pattern.tag for m in backend.pattern_detect({"error": ERROR, "min_score": 0}).results],
            backend.golden_paths({"min_applications": 1}).paths,
        )
    finally:
        backend.close()


def fill(arguments: dict, ids: dict[str, str]) -> dict:
    return {k: ids.get(v, v) if isinstance(v, str) else v for k, v in arguments.items()}


@pytest.fixture(scope="module")
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
async def server(tmp_path_factory):
    """One seeded ``capsule mcp --embedded`` for every case (a server per case would take minutes)."""
    data_dir = new_data_dir(tmp_path_factory.mktemp("strict"))
    ids = seed(data_dir)
    async with Client(mcp_params(data_dir, "--embedded", "--project", PROJECT)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        yield ToolSession(client), tools, data_dir, ids


@pytest.mark.anyio
@pytest.mark.parametrize("tool", sorted(CASES))
async def test_each_tool_refuses_unknown_and_mistyped_arguments_and_changes_nothing(tool, server):
    session, tools, data_dir, ids = server
    valid, (unknown, value), suggestion, (typed, wrong) = CASES[tool]
    before = snapshot(data_dir)
    assert tools[tool].input_schema["additionalProperties"] is False  # published, so clients can check too

    structured, text, is_error = await session.call(tool, {**fill(valid, ids), unknown: value})
    assert is_error and structured is None
    assert f"unknown argument '{unknown}' (did you mean '{suggestion}'?)" in text, text
    assert not any(b in text for b in BOILERPLATE), text

    structured, text, is_error = await session.call(tool, {**fill(valid, ids), typed: wrong})
    assert is_error and structured is None
    assert text.startswith(f"{tool}: invalid arguments: '{typed}': "), text
    assert not any(b in text for b in BOILERPLATE) and repr(wrong) not in text, text
    assert snapshot(data_dir) == before


@pytest.mark.anyio
async def test_every_tool_has_a_case(server):
    _, tools, _, _ = server
    # The Vector Bridge's own tools and the first Capsule's dotted ones answer by their originals' rules
    # (tests/mcp/test_vb_contract.py), not by ours.
    theirs = vb_dialect.ONLY_THEIRS | {name for name in tools if name.startswith("capsule-memory.")}
    assert set(tools) - theirs == set(CASES)


def test_a_missing_argument_and_a_name_given_twice_are_said_briefly(tmp_path):
    async def main():
        async with Client(mcp_params(new_data_dir(tmp_path), "--embedded")) as client:
            session = ToolSession(client)
            _, text, is_error = await session.call("memory_search", {"k": 3})
            assert is_error and text == "memory_search: invalid arguments: 'query' is required"
            # `global` and `chunk_id` are the Vector Bridge's names: its rules, its answer shape.
            _, text, is_error = await session.call(
                "memory_search", {"query": "x", "global": True, "all_projects": False}
            )
            assert is_error and json.loads(text) == {"success": False, "error": "project_root: Required"}
            _, text, is_error = await session.call("memory_feedback", {"chunk_id": True, "helpful": True})
            assert is_error and json.loads(text)["error"] == "chunk_id: Expected number, received boolean"
            _, text, is_error = await session.call(
                "memory_search", {"query": "x", "project": "p", "all_projects": False, "k": 0}
            )
            assert is_error and "'k'" in text  # ours keeps k within 1-20

    anyio.run(main)


def test_a_string_that_looks_like_json_stays_a_string(tmp_path):
    async def main():
        async with Client(mcp_params(new_data_dir(tmp_path), "--embedded", "--project", PROJECT)) as client:
            session = ToolSession(client)
            for name in ("null", "[1, 2]", '{"a": 1}'):
                stored, _ = await session.ok(
                    "memory_store", {"content": f"about {name}", "project": name, "path": name}
                )
                assert stored["memory"]["project"] == name and stored["memory"]["path"] == name

    anyio.run(main)
