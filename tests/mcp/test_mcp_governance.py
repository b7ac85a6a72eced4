"""The governance tools over stdio (``capsule mcp --embedded``, the MCP SDK's own client), and
through the signing proxy to a live ``capsule serve`` (the fixture of test_mcp_remote)."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_support import ToolSession, mcp_params, new_data_dir
from test_mcp_remote import ACCESS_KEY, REGION, SECRET, run_remote, serve  # noqa: F401 (the fixture)


async def _governance_round(session) -> None:
    old, _ = await session.ok("memory_store", {"content": "Ada lives in Paris", "retention": "permanent"})
    old_id = old["memory"]["id"]
    assert old["memory"]["retention"] == "permanent"
    updated, text = await session.ok(
        "memory_update",
        {"id": old_id, "content": "Ada lives in Lyon", "reason": "typo", "if_match": old["memory"]["sha256"]},
    )
    assert updated["version"] == 2 and "version 2" in text
    _, text, is_error = await session.call(
        "memory_update", {"id": old_id, "content": "Ada lives in Nice", "if_match": old["memory"]["sha256"]}
    )
    assert is_error and "precondition_failed" in text
    history, _ = await session.ok("memory_history", {"id": old_id})
    assert [v["content"] for v in history["versions"]] == ["Ada lives in Paris", "Ada lives in Lyon"]
    reverted, _ = await session.ok("memory_revert", {"id": old_id, "version": 1})
    assert reverted["memory"]["content"] == "Ada lives in Paris"
    new, _ = await session.ok("memory_store", {"content": "Ada moved to Berlin", "supersedes": old_id})
    found, _ = await session.ok("memory_search", {"query": "where does Ada live", "include_superseded": True})
    assert [h["id"] for h in found["results"]] == [new["memory"]["id"]]
    assert old_id in found["explanation"]
    temp, _ = await session.ok("memory_store", {"content": "build cache warm until noon", "ttl": 3600})
    assert temp["memory"]["retention"] == "ephemeral" and temp["memory"]["expires_at"]
    listed, _ = await session.ok("memory_list", {"retention": "ephemeral"})
    assert [m["id"] for m in listed["memories"]] == [temp["memory"]["id"]]
    keep, _ = await session.ok(
        "memory_store", {"content": "The signing key lives in the vault", "retention": "irreplaceable"}
    )
    _, text, is_error = await session.call("memory_forget", {"id": keep["memory"]["id"]})
    assert is_error and "force" in text
    forced, _ = await session.ok("memory_forget", {"id": keep["memory"]["id"], "force": True})
    assert forced["memory"]["forgotten_at"]
    _, text, is_error = await session.call("memory_store", {"content": "x", "ttl": 0})
    assert is_error and "ttl" in text


def test_governance_tools_embedded(tmp_path):
    async def main():
        async with Client(mcp_params(new_data_dir(tmp_path), "--embedded", "--project", "people")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            update = tools["memory_update"].input_schema["properties"]
            assert set(update["retention"]["enum"]) >= {"irreplaceable", "ephemeral", "auto"}
            await _governance_round(ToolSession(client))

    anyio.run(main)


def test_governance_tools_through_the_signing_proxy(serve, tmp_path):  # noqa: F811
    run_remote(
        tmp_path,
        _governance_round,
        "--url",
        serve["url"],
        "--auth",
        "sigv4",
        "--region",
        REGION,
        "--project",
        "people-remote",
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET,
    )
