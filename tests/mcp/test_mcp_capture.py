"""The capture tools through ``capsule mcp --embedded``, driven by the MCP SDK's stdio client."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_support import ToolSession, mcp_params, new_data_dir

EVENTS = [
    {"role": "user", "text": "Can you check why the build is slow?"},
    {
        "role": "assistant",
        "text": "The root cause was a stale .pyc file from the old package layout.",
        "time": "2026-03-02T10:00:00+00:00",
        "session": "s1",
    },
    {"role": "assistant", "text": "We decided to use SQLite in WAL mode because it handles concurrent readers well."},
    {"role": "user", "text": "Thanks!"},
]


def test_capture_candidates_approve_reject_over_stdio(tmp_path):
    async def body(session, client):
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"memory_capture", "memory_candidates", "memory_approve", "memory_reject"} <= names
        captured, text = await session.ok("memory_capture", {"events": EVENTS})
        ids = [c["id"] for c in captured["candidates"]]
        assert len(ids) == 2 and ids[0] in text
        listed, _ = await session.ok("memory_candidates", {})
        assert {c["id"] for c in listed["candidates"]} == set(ids)
        approved, _ = await session.ok(
            "memory_approve", {"id": ids[0], "text": "Stale .pyc files broke imports.", "tags": ["python"]}
        )
        assert approved["memory"]["content"] == "Stale .pyc files broke imports."
        rejected, _ = await session.ok("memory_reject", {"id": ids[1], "reason": "known"})
        assert rejected["candidate"]["status"] == "rejected"
        _, text, is_error = await session.call("memory_approve", {"id": ids[0]})
        assert is_error and "already approved" in text
        _, text, is_error = await session.call("memory_approve", {"id": "ab" * 16})
        assert is_error and "not_found" in text
        _, text, is_error = await session.call("memory_capture", {"events": [{"role": "user", "txt": "x"}]})
        assert is_error and "txt" in text
        again, _ = await session.ok("memory_capture", {"events": EVENTS})
        assert again["candidates"] == []
        found, _ = await session.ok("memory_search", {"query": "stale pyc imports"})
        assert any(r["content"] == "Stale .pyc files broke imports." for r in found["results"])

    async def main():
        async with Client(mcp_params(new_data_dir(tmp_path), "--embedded", "--project", "cap")) as client:
            await body(ToolSession(client), client)

    anyio.run(main)
