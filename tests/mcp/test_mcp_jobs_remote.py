"""A tool call whose request becomes a job (functions.async_jobs): ``memory_ingest`` of a text
over the synchronous budget, through ``capsule mcp --url`` to a live ``capsule serve``, is
answered 202; the proxy polls the job and the tool answers with the ingest's result as if the call
had been synchronous (no new tool)."""

from __future__ import annotations

import json
import sqlite3

import anyio
import pytest
from mcp import Client
from mcp_support import ToolSession, mcp_params, new_data_dir, signing_serve

from functions.async_jobs import SYNC_INGEST_CHUNKS

ACCESS_KEY = "AKIACAPSULETEST0002"
SECRET = "capsule-test-secret/0002+abcdefghij"
TENANT = "arn:aws:iam::123456789012:user/jobs"
REGION = "eu-west-1"


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    with signing_serve(tmp_path_factory.mktemp("jobs"), ACCESS_KEY, SECRET, TENANT, REGION) as served:
        yield served


def test_an_ingest_past_the_budget_is_waited_for_and_answered_as_usual(serve, tmp_path):
    section = "Step {n}: restart the worker pool, then check the queue depth and the error budget. " * 40
    # one chunk a section: past the budget, within the project's rolling limit of 100
    text = "\n\n".join(section.format(n=n) for n in range(SYNC_INGEST_CHUNKS + 16))

    async def main():
        params = mcp_params(
            new_data_dir(tmp_path),
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
        async with Client(params) as client:
            session = ToolSession(client)
            ingested, said = await session.ok("memory_ingest", {"text": text, "path": "docs/runbook.md"})
            assert ingested["chunks"] > SYNC_INGEST_CHUNKS, ingested
            assert "job" not in said.lower()

    anyio.run(main)
    # It was a job: the server kept it, succeeded, with the answer the tool returned.
    (db,) = [p for p in serve["data_dir"].rglob("*.db") if _has_jobs(p)]
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT operation, status, response FROM async_jobs").fetchall()
    assert [(op, status) for op, status, _ in rows] == [("ingest", "succeeded")]
    assert json.loads(json.loads(rows[0][2])["body"])["chunks"] == SYNC_INGEST_CHUNKS + 16


def _has_jobs(path) -> bool:
    with sqlite3.connect(path) as conn:
        return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'async_jobs'").fetchone())
