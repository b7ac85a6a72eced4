"""The learning tools over stdio: solutions, patterns, golden paths and mining, on a seeded store."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_support import ERROR, FIXPACK, ToolSession, mcp_params, new_data_dir

from capsule import Settings
from mcp_client.backends import EmbeddedBackend

ALL_TOOLS = {
    "memory_store",
    "memory_ingest",
    "memory_search",
    "memory_list",
    "memory_pin",
    "memory_forget",
    "memory_feedback",
    "memory_projects",
    "memory_get",
    "memory_restore",
    "solution_search",
    "solution_apply",
    "pattern_detect",
    "pattern_solutions",
    "pattern_link",
    "golden_paths",
    "detect_patterns",
    "memory_capture",
    "memory_candidates",
    "memory_approve",
    "memory_reject",
    "memory_update",
    "memory_history",
    "memory_revert",
    # the Vector Bridge's own tools and the first Capsule's (tests/mcp/test_vb_contract.py)
    "solution_preview",
    "solution_upsert",
    "auto_setup_credentials",
    "save_credentials",
    "capsule-memory.store",
    "capsule-memory.search",
    "capsule-memory.list",
    "capsule-memory.pin",
    "capsule-memory.forget",
}


def seed(data_dir) -> str:
    """One solution, and a recurring failure in two projects, as earlier sessions would leave them."""
    backend = EmbeddedBackend.from_settings(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        solution = backend.learning.create_solution(backend.tenant, FIXPACK).solution
        for project, n in [("api", 1), ("api", 2), ("worker", 3)]:
            backend.store(
                {
                    "project": project,
                    "content": f"{ERROR} (attempt {n})",
                    "meta": {"type": "error", "outcome_status": "failure"},
                }
            )
        backend.store(
            {
                "project": "worker",
                "content": "Fixed the ECONNREFUSED 6379 error by pointing REDIS_URL at redis.internal",
                "meta": {"outcome_status": "success"},
            }
        )
    finally:
        backend.close()
    return solution.id


def test_every_learning_tool_works_end_to_end(tmp_path):
    data_dir = new_data_dir(tmp_path)
    solution_id = seed(data_dir)

    async def main():
        async with Client(mcp_params(data_dir, "--embedded", "--project", "worker")) as client:
            session = ToolSession(client)
            assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS

            found, text = await session.ok("solution_search", {"error": ERROR})
            assert found["results"][0]["solution"]["id"] == solution_id
            assert "Point REDIS_URL" in text and "use the private host" in text and "solution_apply" in text

            applied, _ = await session.ok(
                "solution_apply",
                {
                    "solution_id": solution_id,
                    "success": True,
                    "error": ERROR,
                    "pattern_tag": "redis-refused",
                    "pattern_category": "network",
                },
            )
            assert applied["solution"]["success_count"] == 1
            assert applied["pattern"]["tag"] == "redis-refused"

            mined, text = await session.ok("detect_patterns")
            assert mined["scanned"] == 3 and mined["clusters"] >= 1
            recurring = [p for p in mined["patterns"] if p["occurrences"] >= 2]
            assert recurring and recurring[0]["tag"] in text
            tag, category = recurring[0]["tag"], recurring[0]["category"]

            detected, text = await session.ok("pattern_detect", {"error": ERROR})
            assert tag in {m["pattern"]["tag"] for m in detected["results"]}

            counts = []
            for _ in range(3):
                linked, _ = await session.ok(
                    "pattern_link", {"tag": tag, "category": category, "solution_id": solution_id, "success": True}
                )
                counts.append(linked["link"]["success"])
            assert counts == [counts[0], counts[0] + 1, counts[0] + 2] and linked["pattern_created"] is False

            solutions, text = await session.ok("pattern_solutions", {"tag": tag, "category": category})
            assert solutions["solutions"][0]["id"] == solution_id and solution_id in text

            golden, text = await session.ok("golden_paths", {"min_applications": 3})
            assert any(p["solution"] and p["solution"]["id"] == solution_id for p in golden["paths"])
            assert tag in text

            for name, arguments, expected in [
                ("solution_apply", {"solution_id": "no-such-solution", "success": True}, "not_found"),
                ("pattern_solutions", {"tag": "no-such-pattern"}, "not_found"),
                ("pattern_link", {"tag": tag, "solution_id": "nope", "success": True}, "not_found"),
                ("detect_patterns", {"min_occurrences": 1}, "min_occurrences"),
                ("solution_search", {"error": ""}, "error"),
            ]:
                structured, text, is_error = await session.call(name, arguments)
                assert is_error and expected in text, (name, text)

    anyio.run(main)
