"""Remote mode: ``capsule mcp --url`` proxying to a live ``capsule serve`` that verifies SigV4
exactly as API Gateway does, driven by the MCP SDK's stdio client."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_support import ERROR, FIXPACK, ToolSession, mcp_params, new_data_dir, signing_serve

ACCESS_KEY = "AKIACAPSULETEST0001"
SECRET = "capsule-test-secret/0001+abcdefghij"
TENANT = "arn:aws:iam::123456789012:user/dev"
REGION = "eu-west-1"


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    """A live ``capsule serve`` (one worker, hashing embedder) with one SigV4 key and one API key."""
    with signing_serve(tmp_path_factory.mktemp("remote"), ACCESS_KEY, SECRET, TENANT, REGION) as served:
        yield served


def run_remote(tmp_path: Path, body, *args: str, **env: str) -> None:
    async def main():
        params = mcp_params(new_data_dir(tmp_path), *args, **env)
        async with Client(params) as client:
            await body(ToolSession(client))

    anyio.run(main)


def test_every_memory_tool_works_through_the_signing_proxy(serve, tmp_path):
    async def body(session):
        stored, _ = await session.ok(
            "memory_store",
            {"content": "Deploys go through the blue/green switch", "type": "decision", "tags": ["deploy"]},
        )
        memory_id = stored["memory"]["id"]
        ingested, _ = await session.ok(
            "memory_ingest", {"text": "Runbook. Roll back with the switch.", "path": "docs/runbook.md"}
        )
        assert ingested["chunks"] == 1
        found, text = await session.ok("memory_search", {"query": "blue green deploy", "k": 3})
        assert found["results"][0]["id"] == memory_id and memory_id in text
        listed, _ = await session.ok("memory_list", {"limit": 1})
        assert len(listed["memories"]) == 1 and listed["next_cursor"]
        more, _ = await session.ok("memory_list", {"limit": 1, "cursor": listed["next_cursor"]})
        assert more["memories"][0]["id"] != listed["memories"][0]["id"]
        assert (await session.ok("memory_pin", {"id": memory_id}))[0]["memory"]["pinned"] is True
        assert (await session.ok("memory_pin", {"id": memory_id, "action": "unpin"}))[0]["memory"]["pinned"] is False
        voted, _ = await session.ok("memory_feedback", {"id": memory_id, "helpful": True})
        assert voted["memory"]["helpful"] == 1
        projects, _ = await session.ok("memory_projects")
        assert "ops" in [p["project"] for p in projects["projects"]]
        whole, _ = await session.ok("memory_get", {"id": memory_id, "offset": 8, "max_chars": 500})
        assert whole["memory"]["content"] == "go through the blue/green switch" and whole["next_offset"] is None
        forgotten, _ = await session.ok("memory_forget", {"id": memory_id, "reason": "moved to canary"})
        assert forgotten["memory"]["forgotten_at"]
        restored, _ = await session.ok("memory_restore", {"id": memory_id})
        assert restored["memory"]["forgotten_at"] is None
        structured, text, is_error = await session.call("memory_pin", {"id": "no-such-memory"})
        assert is_error and "not_found" in text and "HTTP 404" in text

    run_remote(
        tmp_path,
        body,
        "--url",
        serve["url"],
        "--auth",
        "sigv4",
        "--region",
        REGION,
        "--project",
        "ops",
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET,
    )


def test_a_wrong_secret_is_refused_and_reported_as_a_tool_error(serve, tmp_path):
    async def body(session):
        structured, text, is_error = await session.call("memory_search", {"query": "deploy"})
        assert is_error and structured is None
        assert "forbidden" in text and "HTTP 403" in text
        assert "not-the-secret" not in text

    run_remote(
        tmp_path,
        body,
        "--url",
        serve["url"],
        "--auth",
        "sigv4",
        "--region",
        REGION,
        "--project",
        "ops",
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY="not-the-secret",
    )


def test_an_api_key_reaches_its_own_tenant_only(serve, tmp_path):
    async def body(session):
        stored, _ = await session.ok("memory_store", {"content": "The API key tenant's own note"})
        found, _ = await session.ok("memory_search", {"query": "blue green deploy", "all_projects": True})
        assert all(h["project"] != "ops" for h in found["results"])  # the SigV4 tenant's memories stay theirs
        assert stored["memory"]["project"] == "notes"

    run_remote(
        tmp_path,
        body,
        "--url",
        serve["url"],
        "--auth",
        "apikey",
        "--project",
        "notes",
        CAPSULE_API_KEY=serve["api_key"],
    )


def test_the_memory_url_can_come_from_the_environment(serve, tmp_path):
    async def body(session):
        structured, text, is_error = await session.call("memory_projects")
        assert is_error and "unauthorized" in text and "HTTP 401" in text  # it reached the server, unsigned

    run_remote(tmp_path, body, CAPSULE_MEMORY_URL=serve["url"], CAPSULE_AUTH="none")


def test_the_learning_tools_work_through_the_signing_proxy(serve, tmp_path):
    from botocore.credentials import Credentials

    from mcp_client.auth import SigV4Auth
    from mcp_client.client import CapsuleClient

    # Seed as the SigV4 tenant through the Python client itself: a solution and a recurring failure.
    auth = SigV4Auth.for_url(serve["url"], region=REGION, credentials=Credentials(ACCESS_KEY, SECRET))
    client = CapsuleClient(serve["url"], auth=auth)
    solution_id = client.create_solution(FIXPACK).solution.id
    assert client.get_solution(solution_id).solution.title == FIXPACK["title"]
    assert [s.id for s in client.list_solutions({"category": "network"}).solutions] == [solution_id]
    for project, n in [("api", 1), ("api", 2), ("worker", 3)]:
        client.store(
            {
                "project": project,
                "content": f"{ERROR} (attempt {n})",
                "meta": {"type": "error", "outcome_status": "failure"},
            }
        )

    async def body(session):
        found, _ = await session.ok("solution_search", {"error": ERROR})
        assert found["results"][0]["solution"]["id"] == solution_id
        applied, _ = await session.ok("solution_apply", {"solution_id": solution_id, "success": True})
        assert applied["solution"]["success_count"] == 1
        mined, _ = await session.ok("detect_patterns")
        assert mined["scanned"] == 3 and mined["patterns"]
        tag, category = mined["patterns"][0]["tag"], mined["patterns"][0]["category"]
        detected, _ = await session.ok("pattern_detect", {"error": ERROR})
        assert tag in {m["pattern"]["tag"] for m in detected["results"]}
        for _ in range(3):
            linked, _ = await session.ok(
                "pattern_link", {"tag": tag, "category": category, "solution_id": solution_id, "success": True}
            )
        solutions, _ = await session.ok("pattern_solutions", {"tag": tag, "category": category})
        assert solutions["solutions"][0]["id"] == solution_id
        golden, _ = await session.ok("golden_paths", {"min_applications": 3})
        assert golden["paths"][0]["solution"]["id"] == solution_id
        structured, text, is_error = await session.call("solution_apply", {"solution_id": "nope", "success": False})
        assert is_error and "not_found" in text and "HTTP 404" in text

    run_remote(
        tmp_path,
        body,
        "--url",
        serve["url"],
        "--region",
        REGION,
        "--project",
        "worker",
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET,
    )
    assert client.delete_solution(solution_id).deleted is True


def test_without_aws_credentials_each_call_says_how_to_fix_it(serve, tmp_path):
    async def body(session):
        for _ in range(2):  # it keeps trying, so credentials made later (aws sso login) are picked up
            structured, text, is_error = await session.call("memory_search", {"query": "deploy"})
            assert is_error and "unauthorized" in text and "no AWS credentials" in text

    run_remote(tmp_path, body, "--url", serve["url"], "--region", REGION)
