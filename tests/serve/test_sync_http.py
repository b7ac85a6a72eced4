"""``capsule sync`` against a real ``capsule serve`` on loopback as the remote: both ways, ids
kept, pins / votes / forgets / restores travelling, conflicts by the documented rule,
idempotent, resumable after SIGKILL and after a remote answering 5xx."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from capsule.config import Settings
from capsule.core.errors import CapsuleError
from capsule.runtime.service import build_service
from capsule.sync import LocalPeer, Watermarks, run_sync
from capsule_cli.sync_cmd import HttpPeer
from mcp_client.auth import BearerAuth
from mcp_client.client import CapsuleClient, Response, Retry
from mcp_client.transport import PooledTransport

from .server import ROOT, Server, capsule, environment


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("remote"))
    yield srv
    assert srv.stop() == 0


def sync(remote, local_dir, direction="both", *projects: str, ok=True) -> dict:
    args = ["sync", direction, "--url", remote.url, "--api-key-file", str(remote.data_dir / "gateway-token"), "--json"]
    for project in projects:
        args += ["--project", project]
    done = capsule(*args, data_dir=local_dir)
    if ok:
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
    return {"returncode": done.returncode, "stderr": done.stderr}


def totals(report: dict, direction: str) -> tuple[int, int]:
    moves = [m for m in report["moves"] if m["direction"] == direction]
    return sum(m["sent"] for m in moves), sum(m["applied"] for m in moves)


def local_cli(local_dir, *args: str) -> dict:
    done = capsule(*args, "--json", data_dir=local_dir)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def remote_memory(remote, memory_id: str) -> dict:
    got = remote.request("GET", f"/v1/memories/{memory_id}")
    assert got.status == 200, got
    return got.json["memory"]


def test_both_ways_with_ids_pins_votes_forgets_and_a_second_run_moves_nothing(remote, tmp_path):
    local = tmp_path / "local"
    ids = [
        local_cli(local, "store", f"decision {n}: keep WAL mode on", "--project", "alpha")["memory"]["id"]
        for n in range(4)
    ]
    local_cli(local, "pin", ids[0])
    local_cli(local, "feedback", ids[1], "--helpful", "--context", "it worked")
    local_cli(local, "forget", ids[2], "--reason", "stale")
    first = sync(remote, local, "both", "alpha")
    assert totals(first, "push") == (4, 4)
    assert remote_memory(remote, ids[0])["pinned"] is True
    assert remote_memory(remote, ids[1])["helpful"] == 1
    assert remote.request("GET", f"/v1/memories/{ids[2]}").status == 404  # forgotten there too
    assert totals(first, "pull") == (0, 0)  # the remote took only our rows: nothing comes back

    again = sync(remote, local, "both", "alpha")
    assert totals(again, "push") == (0, 0) and totals(again, "pull") == (0, 0)

    made = remote.request("POST", "/v1/memories", {"project": "alpha", "content": "remote fact: deploys on Fridays"})
    assert made.status == 201
    assert remote.request("POST", f"/v1/memories/{ids[2]}/restore").status == 200
    assert remote.request("DELETE", f"/v1/memories/{ids[3]}?reason=wrong").status == 200
    pulled = sync(remote, local, "pull", "alpha")
    assert totals(pulled, "pull") == (3, 3)
    assert local_cli(local, "get", made.json["memory"]["id"])["memory"]["content"] == "remote fact: deploys on Fridays"
    assert local_cli(local, "get", ids[2])["memory"]["forgotten_at"] is None  # the restore travelled
    gone = capsule("get", ids[3], data_dir=local)
    assert gone.returncode == 1  # the forget travelled
    final = sync(remote, local, "both", "alpha")
    assert totals(final, "push")[1] == 0 and totals(final, "pull") == (0, 0)


def test_conflicts_follow_the_rule_and_are_reported(remote, tmp_path):
    local = tmp_path / "local"
    memory_id = local_cli(local, "store", "the cache TTL is 5 minutes", "--project", "beta")["memory"]["id"]
    sync(remote, local, "both", "beta")
    local_cli(local, "pin", memory_id)  # an edit here ...
    time.sleep(0.05)
    assert (
        remote.request("DELETE", f"/v1/memories/{memory_id}?reason=outdated").status == 200
    )  # ... a later forget there
    report = sync(remote, local, "both", "beta")
    conflicts = [c for m in report["moves"] for c in m["conflicts"]]
    assert conflicts and conflicts[0]["id"] == memory_id
    assert (
        conflicts[0]["fields"]["deleted_at"] in ("kept", "arrived")
        and "forget wins over an older edit" in conflicts[0]["rule"]
    )
    assert capsule("get", memory_id, data_dir=local).returncode == 1  # forgotten on both sides
    assert remote.request("GET", f"/v1/memories/{memory_id}").status == 404


def test_a_sync_killed_with_sigkill_resumes_and_loses_nothing(remote, tmp_path):
    local = tmp_path / "local"
    service = build_service(Settings(data_dir=local, embedder="hashing"))
    ids = [
        service.store_memory("local", {"project": "gamma", "content": f"note {n}: " + "word " * 40}).memory.id
        for n in range(900)
    ]
    here = next(p for p in service.projects("local").projects if p.project == "gamma")  # the rolling limit evicted some
    service.store.close()
    args = [
        sys.executable,
        "-m",
        "capsule_cli",
        "sync",
        "push",
        "--url",
        remote.url,
        "--project",
        "gamma",
        "--api-key-file",
        str(remote.data_dir / "gateway-token"),
        "--data-dir",
        str(local),
    ]
    proc = subprocess.Popen(args, env=environment(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    marks = local / "sync"
    deadline = time.monotonic() + 120
    while not (marks.exists() and any(marks.glob("*.json"))) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL  # killed mid-sync, after its first confirmed batch
    moved_before = remote.request("GET", "/v1/projects").json
    report = sync(remote, local, "push", "gamma")
    sent, _ = totals(report, "push")
    assert 0 < sent < 900, sent  # it resumed where the killed run stopped
    listed = remote.request("GET", "/v1/projects").json
    gamma = next(p for p in listed["projects"] if p["project"] == "gamma")
    assert (gamma["memories"], gamma["forgotten"]) == (here.memories, here.forgotten) and gamma["memories"] + gamma[
        "forgotten"
    ] == 900, (moved_before, gamma)
    for memory_id in ids[-here.memories :: 17]:  # the active ones, under their own ids
        assert remote_memory(remote, memory_id)["id"] == memory_id
    assert totals(sync(remote, local, "push", "gamma"), "push") == (0, 0)


def test_a_remote_answering_5xx_mid_sync_stops_clearly_and_the_next_run_resumes(remote, tmp_path):
    local = build_service(Settings(data_dir=tmp_path / "local", embedder="hashing"))
    for n in range(250):
        local.store_memory("local", {"project": "delta", "content": f"fact {n} about the build"})
    here = next(p for p in local.projects("local").projects if p.project == "delta")
    calls = {"apply": 0}
    real = PooledTransport(remote.url)

    def flaky(method, url, headers, body, timeout):
        if "/v1/sync/apply" in url:
            calls["apply"] += 1
            if calls["apply"] >= 2:
                return Response(500, {}, b'{"error": {"code": "internal", "message": "boom", "details": null}}')
        return real(method, url, headers, body, timeout)

    token = (remote.data_dir / "gateway-token").read_text().strip()
    retry = Retry(attempts=2, sleep=lambda s: None)
    broken = HttpPeer(CapsuleClient(remote.url, auth=BearerAuth(token), retry=retry, send=flaky))
    marks = Watermarks(tmp_path / "marks.json", remote.url)
    with pytest.raises(CapsuleError):
        run_sync(LocalPeer(local, "local"), broken, ["delta"], "push", marks)
    stopped_at = Watermarks(tmp_path / "marks.json", remote.url).get("delta", "push")
    assert stopped_at is not None  # the first batch was confirmed and kept
    working = HttpPeer(CapsuleClient(remote.url, auth=BearerAuth(token)))
    report = run_sync(LocalPeer(local, "local"), working, ["delta"], "push", marks)
    assert report.total("sent") == 150  # the 100 confirmed before the failure are not sent again
    delta = next(p for p in remote.request("GET", "/v1/projects").json["projects"] if p["project"] == "delta")
    assert (delta["memories"], delta["forgotten"]) == (here.memories, here.forgotten)
    local.store.close()
