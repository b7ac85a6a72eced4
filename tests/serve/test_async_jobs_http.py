"""Asynchronous jobs over real HTTP against ``capsule serve``: a job accepted with 202 runs on a
thread of the gateway worker and is polled to its result; a job a stopped server left queued is
taken up when the server starts again."""

from __future__ import annotations

import json
import sqlite3
import time

from capsule.config import Settings
from capsule.runtime.service import build_service
from capsule.store.async_jobs import QUEUED, Job
from functions import async_jobs
from functions.async_jobs import SYNC_INGEST_CHUNKS

from .server import Server, capsule

INGEST = {"project": "jobs-http", "text": "The deploy needs python3.12 on PATH.\n\nThe cache is /var/cache/app."}


def _until_done(server: Server, location: str, within_s: float = 60) -> dict:
    ends = time.monotonic() + within_s
    while time.monotonic() < ends:
        polled = server.request("GET", location)
        assert polled.status == 200, polled
        if polled.json["status"] in ("succeeded", "failed"):
            return polled.json
        time.sleep(0.2)
    raise AssertionError(f"the job at {location} did not finish within {within_s} s")


def test_a_job_runs_in_the_gateway_and_survives_a_restart(tmp_path):
    server = Server(tmp_path)
    try:
        accepted = server.request("POST", "/v1/memories/ingest", INGEST, headers={"Prefer": "respond-async"})
        assert accepted.status == 202, accepted
        location = accepted.headers["Location"]
        assert location == accepted.json["location"] == f"/v1/jobs/{accepted.json['id']}"
        done = _until_done(server, location)
        assert done["status"] == "succeeded" and done["status_code"] == 201, done
        assert done["result"]["chunks"] == 1 and len(done["result"]["ids"]) == 1
        listed = server.request("GET", "/v1/memories?project=jobs-http")
        assert [m["id"] for m in listed.json["memories"]] == done["result"]["ids"]
        assert server.request("GET", "/v1/jobs/job_nothing").status == 404
        assert server.request("GET", location, token=None).status == 401
    finally:
        assert server.stop() == 0

    # A job left queued by a server that stopped (written here as the server would keep it).
    service = build_service(Settings(data_dir=tmp_path, embedder="hashing"))
    try:
        store = async_jobs.store_for(service.store)
        # the tenant and principal are the token's: read off the first job
        (row,) = service.store._read("SELECT tenant, principal FROM async_jobs WHERE id = ?", (accepted.json["id"],))
        first = store.get(row["tenant"], accepted.json["id"], now=time.time())
        assert first is not None
        request = {**first.request, "body": json.dumps({**INGEST, "text": "left behind"})}
        now = time.time()
        store.create(
            Job("job_left_behind", row["tenant"], row["principal"], "ingest", request, QUEUED, now, now + 3600)
        )
    finally:
        service.store.close()
    again = Server(tmp_path)
    try:
        done = _until_done(again, "/v1/jobs/job_left_behind")
        assert done["status"] == "succeeded" and done["result"]["chunks"] == 1, done
    finally:
        assert again.stop() == 0


def test_a_command_on_the_warm_route_waits_for_the_job_its_request_became(tmp_path):
    """``capsule ingest`` of a file past the synchronous budget, asked of the running server
    (mcp_client.local_server): the server runs it as a job, the command polls it and prints the
    ingest's result as usual."""
    sections = SYNC_INGEST_CHUNKS + 16  # one chunk each: past the budget, within the project's 100
    note = tmp_path / "runbook.md"
    step = "Step {n}: restart the worker pool, then check the queue depth and the error budget. " * 40
    note.write_text("\n\n".join(step.format(n=n) for n in range(sections)))
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    server = Server(data_dir)
    try:
        ends = time.monotonic() + 120  # the announcement comes once the workers answer
        while not (data_dir / "serve.json").exists() and time.monotonic() < ends:
            time.sleep(0.05)
        done = capsule("ingest", str(note), "--project", "warm-jobs", data_dir=data_dir)
        assert done.returncode == 0, done.stderr
        assert f"{sections} chunks, {sections} stored" in done.stdout, done.stdout
        listed = server.request("GET", "/v1/memories?project=warm-jobs&limit=1")
        assert listed.status == 200 and listed.json["memories"]
    finally:
        assert server.stop() == 0
    (db,) = [p for p in data_dir.rglob("*.db") if "async_jobs" in _tables(p)]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT operation, status FROM async_jobs").fetchall() == [("ingest", "succeeded")]


def _tables(path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
