"""An agent written for the Vector Bridge MCP server works unchanged against ``capsule mcp --embedded``.

Replays, over the MCP SDK's stdio client, the "Usage Examples" and every tool example of the Vector
Bridge README (/work/shared/seeds/004_*.txt) with their argument names and values as written, and
checks what they should have done: the project named by ``project_root``, the ``meta`` kept, the
filters, ``global``, ``limit``, integer ids, the feedback's effect and the result fields it reads.
"""

from __future__ import annotations

import json

import anyio
from mcp import Client
from mcp_support import ToolSession, mcp_params, new_data_dir

from capsule import Settings
from capsule.learning import models as lm
from mcp_client.backends import EmbeddedBackend

MY_APP = "/Users/me/my-app"
MY_PROJECT = "/Users/name/my-project"
REDIS = "ENOTFOUND redis.railway.internal"
VB_SCORES = {"chunk_id", "vector_score", "bm25_score", "time_score", "feedback_score", "outcome_bonus"}


def redis_fixpack(title: str) -> dict:
    return {
        "title": title,
        "category": "deploy",
        "signatures": [{"text": f"Error: getaddrinfo {REDIS}", "regexes": [r"ENOTFOUND\s+redis\.railway\.internal"]}],
        "steps": [{"step_order": 1, "kind": "cmd", "payload": {"command": "echo REDIS_FAMILY=0 >> .env"}}],
    }


def seed(data_dir) -> str:
    """Solutions as a Vector Bridge import leaves them: solution 16 (its integer id), and a second fix."""
    backend = EmbeddedBackend.from_settings(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        learning = backend.learning
        fixpack = lm.Fixpack.model_validate(redis_fixpack("Redis on Railway: connect with family=0"))
        learning.store.insert_solution(learning._record(backend.tenant, fixpack, solution_id="16"))
        other = learning.create_solution(backend.tenant, redis_fixpack("Redis on Railway: use the private URL"))
    finally:
        backend.close()
    return other.solution.id


def hit_for(found: dict, path: str) -> dict:
    return next(h for h in found["results"] if h["path"] == path)


async def vb(session: ToolSession, tool: str, arguments: dict) -> dict:
    """A Vector Bridge call's answer: its one text item, parsed (JSON for memory_*), never an error."""
    result = await session.client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content[0].text)
    if tool not in ("memory_projects", "golden_paths"):  # those two also carry ours for programs
        assert result.structured_content is None  # the original sent one text item
    text = result.content[0].text
    return json.loads(text) if tool.startswith("memory_") else {"text": text}


async def usage_examples(session: ToolSession) -> None:
    # 1. Ingest code snippet
    ingested = await vb(
        session,
        "memory_ingest",
        {
            "project_root": MY_APP,
            "path": "src/auth.ts",
            "text": "export async function login(email, password) { ... }",
            "meta": {"component": "backend", "category": "code", "outcome_status": "success"},
        },
    )
    assert ingested["success"] is True and ingested["chunks"] == 1
    stored, _ = await session.ok("memory_get", {"id": ingested["ids"][0]})
    memory = stored["memory"]
    assert memory["project"] == MY_APP and memory["path"] == "src/auth.ts"
    assert {k: memory["meta"][k] for k in ("component", "category", "outcome_status")} == {
        "component": "backend",
        "category": "code",
        "outcome_status": "success",
    }

    # 2. Search for similar code
    results = await vb(
        session, "memory_search", {"project_root": MY_APP, "query": "user authentication with email", "k": 5}
    )
    top = results["results"][0]
    assert top["path"] == "src/auth.ts" and top["chunk"].startswith("export async function login")
    assert VB_SCORES <= top["meta"].keys() and top["meta"]["chunk_id"] == ingested["ids"][0]
    assert top["meta"]["outcome_bonus"] == 0.10 and isinstance(top["score"], float)
    assert results["project_id"] == MY_APP

    # 3. Record feedback on helpful result
    await vb(
        session,
        "memory_feedback",
        {"chunk_id": top["meta"]["chunk_id"], "helpful": True, "context": "Solved login bug"},
    )
    # 4. Future searches will rank this result higher
    again = await vb(
        session, "memory_search", {"project_root": MY_APP, "query": "user authentication with email", "k": 5}
    )
    after = hit_for(again, "src/auth.ts")
    assert after["meta"]["feedback_score"] > top["meta"]["feedback_score"] and after["score"] > top["score"]

    # Cross-project patterns: global: true searches every project; without it, only project-a (empty).
    await vb(
        session,
        "memory_ingest",
        {
            "project_root": MY_APP,
            "path": "docker-compose.yml",
            "text": "Redis connection in Docker: use the service name redis, not localhost",
            "meta": {"category": "decision", "component": "infra"},
        },
    )
    local = await vb(
        session, "memory_search", {"project_root": "/Users/me/project-a", "query": "Redis connection Docker", "k": 10}
    )
    assert local["results"] == []
    everywhere = await vb(
        session,
        "memory_search",
        {"project_root": "/Users/me/project-a", "query": "Redis connection Docker", "global": True, "k": 10},
    )
    assert everywhere["results"][0]["path"] == f"{MY_APP}/docker-compose.yml"
    assert everywhere["results"][0]["meta"]["project_root"] == MY_APP
    patterns, _ = await session.ok("detect_patterns", {"min_occurrences": 3, "category": "decision"})
    assert all(p["category"] == "decision" for p in patterns["patterns"])


async def tool_examples(session: ToolSession, second_fix: str) -> None:
    ingested = await vb(
        session,
        "memory_ingest",
        {
            "project_root": MY_PROJECT,
            "path": "src/utils/helper.ts",
            "text": "function add(a, b) { return a + b; }",
            "meta": {"type": "code", "language": "typescript", "outcome_status": "success"},
        },
    )
    meta = (await session.ok("memory_get", {"id": ingested["ids"][0]}))[0]["memory"]["meta"]
    assert (meta["type"], meta["language"], meta["outcome_status"]) == ("code", "typescript", "success")
    # Like the README's result example, as a backend component's code, so the filters have one to keep
    # (the same text again would be kept once: a repeat within 48 hours is deduplicated).
    await vb(
        session,
        "memory_ingest",
        {
            "project_root": MY_PROJECT,
            "path": "src/utils/math.ts",
            "text": "export function add(a: number, b: number) { return a + b; }",
            "meta": {"type": "code", "component": "backend", "category": "code"},
        },
    )

    found = await vb(
        session,
        "memory_search",
        {
            "project_root": MY_PROJECT,
            "query": "how to add two numbers",
            "k": 8,
            "global": False,
            "component": "backend",
            "category": "code",
        },
    )
    assert [h["path"] for h in found["results"]] == ["src/utils/math.ts"]  # helper.ts has no component
    assert found["results"][0]["chunk"] == "export function add(a: number, b: number) { return a + b; }"

    missing = await vb(
        session, "memory_feedback", {"chunk_id": 123, "helpful": True, "context": "Solved my addition function bug"}
    )
    assert missing["success"] is False and "123" in missing["error"]  # taken as an id, just not one we have

    projects = await vb(session, "memory_projects", {})
    assert {MY_APP, MY_PROJECT} <= {p["root_path"] for p in projects["projects"]}

    solutions = (await vb(session, "solution_search", {"error_message": REDIS, "category": "deploy", "limit": 5}))[
        "text"
    ]
    assert "solution_id=16" in solutions and f"solution_id={second_fix}" in solutions
    one = (await vb(session, "solution_search", {"error_message": REDIS, "category": "deploy", "limit": 1}))["text"]
    assert one.startswith("Found 1 matching solutions:")
    none = (await vb(session, "solution_search", {"error_message": REDIS, "category": "python", "limit": 5}))["text"]
    assert none.startswith("No solutions found matching:")

    applied = (await vb(session, "solution_apply", {"solution_id": 16, "success": True}))["text"]
    assert applied == "✅ Success recorded for solution #16\nNew success rate: 100%"

    for _ in range(3):
        linked = (
            await vb(
                session,
                "pattern_link",
                {"pattern_tag": "redis-connection", "pattern_category": "runtime", "solution_id": 16, "success": True},
            )
        )["text"]
    assert linked == '✅ Pattern "redis-connection" successfully linked to solution #16'

    detected = (
        await vb(
            session,
            "pattern_detect",
            {"query_text": "Redis connection failing with ENOTFOUND redis.railway.internal", "limit": 3},
        )
    )["text"]
    assert detected.startswith(("🔍 **Detected", "❌ No patterns detected"))

    ranked = (
        await vb(
            session, "pattern_solutions", {"pattern_tag": "redis-connection", "pattern_category": "runtime", "limit": 5}
        )
    )["text"]
    assert ranked.splitlines()[2] == "### Solution #16: Redis on Railway: connect with family=0"

    golden = (await vb(session, "golden_paths", {"min_applications": 3, "limit": 20}))["text"]
    assert "### redis-connection (runtime) → Solution #16" in golden
    fewer = (await vb(session, "golden_paths", {"min_applications": 4, "limit": 20}))["text"]
    assert fewer == "❌ No golden paths found (min 4 applications required)"


def test_the_vector_bridge_readme_examples_work_unchanged(tmp_path):
    data_dir = new_data_dir(tmp_path)
    second_fix = seed(data_dir)

    async def main():
        async with Client(mcp_params(data_dir, "--embedded")) as client:
            session = ToolSession(client)
            await usage_examples(session)
            await tool_examples(session, second_fix)

    anyio.run(main)


def test_an_outcome_given_by_its_meta_name_is_stored(tmp_path):
    async def main():
        async with Client(mcp_params(new_data_dir(tmp_path), "--embedded", "--project", "app")) as client:
            session = ToolSession(client)
            stored, _ = await session.ok(
                "memory_store", {"content": "Bumping pnpm broke the lockfile", "outcome_status": "failure"}
            )
            assert stored["memory"]["meta"]["outcome_status"] == "failure"
            stored, _ = await session.ok(
                "memory_store",
                {"content": "Pinned pnpm 9 in packageManager", "meta": {"outcome_status": "success", "agent": "fixer"}},
            )
            assert stored["memory"]["meta"]["outcome_status"] == "success"
            assert stored["memory"]["meta"]["agent"] == "fixer"
            _, text, is_error = await session.call(
                "memory_store", {"content": "x", "outcome": "success", "meta": {"outcome_status": "failure"}}
            )
            assert is_error and "outcome_status" in text

    anyio.run(main)
