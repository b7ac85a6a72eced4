"""The Vector Bridge's registered tools answer a Vector Bridge caller as the original did (COMPAT §1, §5, §6),
and the first Capsule Memory's dotted tools answer its bridge's callers (COMPAT §4.1); our own dialect of the
shared tool names stays ours and strict. In process, over the MCP SDK's own client."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_support import capsule_command, capsule_env

from capsule import Settings
from mcp_client import tool_sets
from mcp_client.backends import EmbeddedBackend
from mcp_client.mcp_server import build_server
from mcp_client.tool_kit import ServerState

ROOT = "/Users/me/my-app"
SCORES = {"chunk_id", "vector_score", "bm25_score", "time_score", "feedback_score", "outcome_bonus"}
DIGEST_META = {
    "source": "digest",
    "agent": "IE",
    "task_id": "auth-fix",
    "component": "orchestration",
    "category": "digest",
    "type": "decision",
    "stage": "implemented",
    "outcome_status": "none",
    "confidence": 0.95,
    "project_root": ROOT,
    "project_name": "my-app",
    "status": "valid",
    "tech_stack": ["node", "redis"],
    "nothing": None,
    "tags": "auth",
}
FIXPACK = {  # as the original's files write one: `run`, a check without check_order, a _comment
    "title": "Redis on Railway: connect with family=0",
    "description": "IPv6-only private network.",
    "category": "deploy",
    "component": "backend",
    "tags": ["redis", "railway"],
    "signatures": [
        {
            "text": "Error: getaddrinfo ENOTFOUND redis.railway.internal",
            "regexes": ["ENOTFOUND\\s+redis\\.railway\\.internal"],
        }
    ],
    "steps": [
        {
            "step_order": 1,
            "kind": "cmd",
            "payload": {"run": "echo REDIS_FAMILY=0 >> .env", "cwd": "{project_root}"},
            "description": "Use IPv6",
        }
    ],
    "checks": [{"cmd": "redis-cli ping", "expect_substring": "PONG", "_comment": "needs the private network"}],
}


def run_session(tmp_path, body, project="default-project"):
    def opener():
        return ServerState(
            backend=EmbeddedBackend.from_settings(Settings(data_dir=tmp_path, embedder="hashing")),
            default_project=project,
        )

    async def main():
        async with Client(build_server(opener)) as client:
            await body(client)

    anyio.run(main)


async def text_of(client, tool, arguments):
    result = await client.call_tool(tool, arguments)
    return result.content[0].text, result.is_error, result.structured_content


async def json_of(client, tool, arguments):
    text, is_error, _ = await text_of(client, tool, arguments)
    return json.loads(text), is_error


def test_memory_tools_keep_the_originals_keys_and_meta(tmp_path):
    async def body(client):
        ingested, is_error = await json_of(
            client,
            "memory_ingest",
            {
                "project_root": ROOT,
                "path": "NOTES.md#digest-auth-fix",
                "meta": DIGEST_META,
                "text": "Session Summary: IE agent completed task 'auth-fix'\n\nProblem: login loops after a password "
                "change.\nSolution: reset the token cache on password change.",
            },
        )
        assert not is_error
        assert list(ingested)[:4] == ["success", "chunks", "project_id", "message"]
        assert ingested["success"] is True and ingested["chunks"] == 1
        assert ingested["message"] == "Ingested 1 chunks from NOTES.md#digest-auth-fix"

        found, is_error = await json_of(
            client, "memory_search", {"project_root": ROOT, "query": "token cache login", "k": 2}
        )
        assert not is_error and found["success"] is True and found["total"] == 1 and "project_id" in found
        hit = found["results"][0]
        assert set(hit) == {"path", "chunk", "score", "meta"} and hit["path"] == "NOTES.md#digest-auth-fix"
        assert SCORES <= set(hit["meta"])
        assert {k: hit["meta"][k] for k in DIGEST_META} == DIGEST_META  # kept exactly as sent: none, null, "auth"
        assert hit["meta"]["outcome_bonus"] == 0  # "none" is no success
        assert hit["meta"]["chunk_id"] == ingested["ids"][0]

        feedback, is_error = await json_of(
            client, "memory_feedback", {"chunk_id": hit["meta"]["chunk_id"], "helpful": True, "context": "fixed it"}
        )
        assert feedback == {
            "success": True,
            "message": f"Feedback recorded for chunk {hit['meta']['chunk_id']}",
            "helpful": True,
        }
        missing, is_error = await json_of(client, "memory_feedback", {"chunk_id": 999999, "helpful": False})
        assert missing["success"] is False and "error" in missing and not is_error  # memory_*: no isError

        projects, _ = await json_of(client, "memory_projects", {})
        assert projects["success"] is True and projects["total"] == len(projects["projects"]) == 1
        assert projects["projects"][0]["root_path"] == ROOT and projects["projects"][0]["label"] == "my-app"
        assert projects["projects"][0]["doc_count"] == 1 and "id" in projects["projects"][0]

    run_session(tmp_path, body)


def test_search_defaults_clamps_global_and_the_no_hit_shape(tmp_path):
    long_text = "Redis " + "connection pool exhausted under load; raise maxclients. " * 10

    async def body(client):
        for i in range(12):
            await json_of(
                client,
                "memory_ingest",
                {"project_root": ROOT, "path": f"notes/{i}.md", "text": f"Note {i}: redis connection pool sizing {i}"},
            )
        await json_of(client, "memory_ingest", {"project_root": "/srv/other", "path": "long.md", "text": long_text})

        default_k, _ = await json_of(client, "memory_search", {"project_root": ROOT, "query": "redis connection pool"})
        assert default_k["total"] == 8  # k defaults to 8
        clamped, is_error = await json_of(
            client,
            "memory_search",
            {"project_root": ROOT, "query": "redis pool", "k": 50, "filters": {"status": "open"}},
        )
        assert not is_error and clamped["total"] == 12
        assert "clamped to 20" in clamped["message"] and "filters" in clamped["message"]  # named, not dropped

        every, _ = await json_of(client, "memory_search", {"project_root": None, "query": "maxclients", "k": 1})
        hit = every["results"][0]
        assert "project_id" not in every and hit["meta"]["project_root"] == "/srv/other"
        assert hit["path"] == "/srv/other/long.md"
        assert hit["chunk"] == long_text[:200] + "..."
        flagged, _ = await json_of(
            client, "memory_search", {"project_root": ROOT, "query": "maxclients", "global": True, "k": 1}
        )
        assert flagged["results"][0]["path"] == "/srv/other/long.md"

        none, _ = await json_of(client, "memory_search", {"project_root": "/nowhere", "query": "redis"})
        assert none == {"success": True, "results": [], "message": "No results found"}
        empty, _ = await json_of(client, "memory_search", {"project_root": ROOT, "query": "  "})
        assert empty == {"success": False, "error": "Cannot embed empty text"}
        nothing, _ = await json_of(client, "memory_ingest", {"project_root": ROOT, "path": "x", "text": "   "})
        assert nothing["success"] is True and nothing["chunks"] == 0

    run_session(tmp_path, body)


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("memory_search", {"project_root": ROOT, "query": "x", "k": "5"}, "k"),  # a numeric string is no number
        ("memory_search", {"query": "x", "global": True}, "project_root"),  # the key must be present
        ("memory_ingest", {"project_root": ROOT, "path": "a", "text": "t", "meta": ["a"]}, "meta"),
        ("memory_ingest", {"project_root": ROOT, "text": "t"}, "path"),
        ("memory_feedback", {"chunk_id": 1, "helpful": "yes"}, "helpful"),
        ("solution_preview", {"solution_id": None}, "solution_id"),
    ],
)
def test_what_the_original_refused_is_refused_naming_the_argument(tmp_path, tool, arguments, named):
    async def body(client):
        answer, is_error = await json_of(client, tool, arguments)
        assert is_error and answer["success"] is False and named in answer["error"]
        projects, _ = await json_of(client, "memory_projects", {})
        assert projects["total"] == 0  # a refused call changes nothing

    run_session(tmp_path, body)


def test_solution_tools_answer_in_the_originals_markdown(tmp_path):
    async def body(client):
        created, is_error, _ = await text_of(client, "solution_upsert", FIXPACK)
        assert not is_error, created
        solution_id = re.search(r"Created solution #(\S+): ", created).group(1)
        assert created.splitlines()[1:] == ["Category: deploy", "Signatures: 1", "Steps: 1", "Checks: 1"]

        found, is_error, _ = await text_of(
            client,
            "solution_search",
            {"error_message": "Error: getaddrinfo ENOTFOUND redis.railway.internal at connect"},
        )
        assert not is_error and found.startswith("Found 1 matching solutions:")
        assert f"solution_id={solution_id}" in found and "**Success Rate:** 0% (applied 0 times)" in found
        assert "`echo REDIS_FAMILY=0 >> .env`" in found  # the file's `run` is the command

        preview, _, _ = await text_of(client, "solution_preview", {"solution_id": solution_id})
        assert preview.startswith("# DRY-RUN Preview: Redis on Railway") and "undefined" not in preview
        assert "1. **[CMD]** Use IPv6" in preview and "Timeout: 120000ms" in preview
        assert 'Expected output: contains "PONG"' in preview
        missing, is_error, _ = await text_of(client, "solution_preview", {"solution_id": 404})
        assert missing == "❌ Solution #404 not found" and not is_error

        # Its ids are numbers (an imported one's, tests/mcp/test_mcp_vector_bridge.py); a string id is ours.
        missing, is_error, _ = await text_of(client, "solution_apply", {"solution_id": 404, "success": True})
        assert missing == "❌ Solution #404 not found (nothing recorded)" and not is_error
        _, is_error, applied = await text_of(client, "solution_apply", {"solution_id": solution_id, "success": True})
        assert not is_error and applied["solution"]["success_count"] == 1

        linked, _, _ = await text_of(
            client,
            "pattern_link",
            {"pattern_tag": "redis", "pattern_category": "deploy", "solution_id": solution_id, "success": True},
        )
        assert linked == f'✅ Pattern "redis" successfully linked to solution #{solution_id}'
        paths, _, _ = await text_of(client, "golden_paths", {"min_applications": 1})
        assert paths.startswith("🏆 **Golden Paths** (1 proven pattern-solution combinations)")
        assert f"### redis (deploy) → Solution #{solution_id}" in paths
        none, _, _ = await text_of(client, "golden_paths", {})
        assert none == "❌ No golden paths found (min 3 applications required)"
        listed, _, _ = await text_of(client, "pattern_solutions", {"pattern_tag": "redis"})  # any category
        assert listed.startswith("📋 **Solutions for Pattern: redis**") and f"Solution #{solution_id}" in listed

        ready, _ = await json_of(client, "auto_setup_credentials", {})
        assert ready["success"] is True

    run_session(tmp_path, body)


def test_our_own_dialect_of_the_shared_names_stays_ours(tmp_path):
    async def body(client):
        await json_of(
            client,
            "memory_ingest",
            {"project_root": "default-project", "path": "a.md", "text": "BEGIN IMMEDIATE avoids SQLite deadlocks"},
        )
        text, is_error, structured = await text_of(client, "memory_search", {"query": "sqlite deadlocks"})
        assert not is_error and structured["results"][0]["content"].startswith("BEGIN IMMEDIATE")
        text, is_error, structured = await text_of(client, "memory_search", {"query": "x", "bogus": 1})
        assert is_error and "bogus" in text  # ours refuses an unknown name
        text, is_error, _ = await text_of(client, "memory_projects", {"max_char": 600})
        assert is_error and "max_chars" in text
        _, is_error, found = await text_of(client, "solution_search", {"error": "ENOTFOUND", "component": "api"})
        assert not is_error and found["results"] == []  # component is ours too: our dialect, our answer

    run_session(tmp_path, body)


def test_the_first_capsules_tools_answer_in_its_shapes(tmp_path):
    async def body(client):
        _, is_error, stored = await text_of(client, "capsule-memory.store", {"content": "Use BEGIN IMMEDIATE"})
        assert not is_error and set(stored) == {"id", "pinned", "explanation", "forgottenMemoryId"}
        assert stored["pinned"] is False and stored["forgottenMemoryId"] is None
        text, _, found = await text_of(client, "capsule-memory.search", {"query": "begin immediate", "limit": 5})
        assert found["results"][0]["id"] == stored["id"] and "score" in found["results"][0]
        assert re.search(
            r"1\. Use BEGIN IMMEDIATE\n  • id: \S+\n  • created: \d{4}-\d\d-\d\dT.*Z \(score: \d\.\d{3}\)", text
        )
        _, _, listed = await text_of(client, "capsule-memory.list", {"limit": 100})
        assert listed["items"][0]["createdAt"].endswith("Z") and set(listed) == {"explanation", "items"}
        text, _, unpinned = await text_of(client, "capsule-memory.pin", {"id": stored["id"], "pin": False})
        assert unpinned == {"success": True, "pinned": False, "explanation": "Memory unpinned."}
        assert text == "Memory unpinned. (pinned = false)"
        _, _, pinned = await text_of(client, "capsule-memory.pin", {"id": stored["id"]})  # no value pins
        assert pinned["pinned"] is True
        text, _, forgot = await text_of(client, "capsule-memory.forget", {"id": stored["id"], "reason": "old"})
        assert forgot == {"success": True, "explanation": "Memory forgotten: old"}

    run_session(tmp_path, body)


def test_the_readme_counts_the_tools_the_server_lists(tmp_path):
    root = Path(__file__).resolve().parents[2]
    said = [
        re.search(
            r"`capsule mcp` is an MCP server on stdio with (\d+) tools, of which it lists (\d+) by",
            re.sub(r"\s+", " ", (root / page).read_text("utf-8")),
        )
        for page in ("README.md", "docs/claude.md")
    ]
    assert all(said), "the README and docs/claude.md each state the counts"
    counts = {(int(found.group(1)), int(found.group(2))) for found in said}
    assert len(counts) == 1, counts
    [(every, listed)] = counts
    assert len(tools_list(tmp_path / "all", "all")["tools"]) == every
    assert len(tools_list(tmp_path / "default", "default")["tools"]) == listed


def test_a_project_written_through_the_vector_bridge_has_no_rolling_limit(tmp_path):
    # The original had no limit; ours (100 by default) would refuse this ingest or evict its chunks.
    text = " ".join(f"Decision {i}: the worker queue {i} keeps its own Redis database number {i}." for i in range(5000))

    async def body(client):
        ingested, is_error = await json_of(
            client, "memory_ingest", {"project_root": ROOT, "path": "big.md", "text": text}
        )
        assert not is_error and ingested["success"] is True, ingested
        assert ingested["chunks"] > 100 and "evicted" not in ingested
        projects, _ = await json_of(client, "memory_projects", {})
        assert projects["projects"][0]["doc_count"] == ingested["chunks"]

    run_session(tmp_path, body)


def tools_list(data_dir, tools: str) -> dict:
    """``tools/list``'s result as the client receives it, from a real ``capsule mcp`` (stdin closed at once)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    done = subprocess.run(
        capsule_command("mcp", "--embedded", "--tools", tools),
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        env=capsule_env(data_dir),
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)["result"]


def test_the_default_tool_list_fits_its_budget_and_every_tool_still_answers(tmp_path):
    listed = tools_list(tmp_path / "default", "default")
    size = len(json.dumps(listed, separators=(",", ":"), ensure_ascii=False))
    assert size <= 16_000, size  # paid for in every conversation (issue "Claude's context")
    names = {tool["name"] for tool in listed["tools"]}
    for name in [*tool_sets.SETS["memory"], *tool_sets.SETS["learning"], *tool_sets.SETS["capsule-v1"]]:
        assert name in names
    # An advanced argument is left out of the listing, and still works when sent.
    search = next(tool for tool in listed["tools"] if tool["name"] == "memory_search")
    assert "as_of" not in search["inputSchema"]["properties"] and "query" in search["inputSchema"]["properties"]

    async def body(client):
        _, is_error, _ = await text_of(client, "memory_search", {"query": "x", "as_of": "2026-01-01T00:00:00Z"})
        assert not is_error
        _, is_error, _ = await text_of(client, "memory_candidates", {})  # not listed by default; answers
        assert not is_error

    run_session(tmp_path / "calls", body)


def test_every_advanced_argument_is_a_real_optional_argument():
    every = tools_list_all_models()
    for tool, hidden in tool_sets.ADVANCED.items():
        schema = every[tool]
        assert hidden <= set(schema["properties"]), (tool, hidden - set(schema["properties"]))
        assert not hidden & set(schema.get("required", [])), tool


def tools_list_all_models() -> dict:
    import importlib

    from mcp_client.mcp_server import TOOL_MODULES
    from mcp_client.strict_tools import ToolRegistry

    registry = ToolRegistry()
    for module in TOOL_MODULES:
        importlib.import_module(module).register(registry)
    return {tool.name: tool.parameters for tool in registry.tools}


def test_twenty_hits_over_long_memories_fit_the_default_budget_each_field_once(tmp_path):
    root = Path(__file__).resolve().parents[2]
    # A long document: the README and its docs/ pages, one after another (the README alone is short).
    readme = "\n\n".join(
        page.read_text("utf-8") for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    )

    async def body(client):
        await text_of(client, "memory_ingest", {"text": readme, "path": "README.md"})
        text, is_error, found = await text_of(
            client, "memory_search", {"query": "search ranking memory project", "k": 20}
        )
        assert not is_error and len(found["results"]) == 20 and found["omitted"] == 0
        for hit in found["results"]:
            assert hit["id"] in text and len(hit["content"]) <= 200  # an excerpt; memory_get reads it whole
            assert "chunk_id" not in hit["meta"] and "vector_score" not in hit["meta"]  # scores once: components
            assert not isinstance(hit.get("chunk"), str)  # the text once: content
        whole, _, got = await text_of(client, "memory_get", {"id": found["results"][0]["id"][:12]})
        assert len(got["memory"]["content"]) > 200

    run_session(tmp_path, body)
