"""``capsule tenants merge --from-sessions`` as a subprocess on a real data folder."""

from __future__ import annotations

import json
import subprocess

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.embedders import HashingEmbedder
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from tests.conftest import CLI, REPO, cli_env

ROLE = "arn:aws:iam::123456789012:role/capsule-dev"
SESSION = "arn:aws:sts::123456789012:assumed-role/capsule-dev/botocore-session-1795989600"


def run(data_dir, *args):
    return subprocess.run(
        [*CLI, "tenants", "merge", *args], cwd=REPO, env=cli_env(data_dir), capture_output=True, text=True, timeout=120
    )


def seed(data_dir) -> str:
    store = SQLiteStore(data_dir / "capsule.db")
    store.migrate()
    service = MemoryService(
        store, HashingEmbedder(), clock=FrozenClock(), settings=Settings(data_dir=data_dir, embedder="hashing")
    )
    memory_id = service.store_memory(SESSION, {"project": "api", "content": "stored an hour ago"}).memory.id
    store.close()
    return memory_id


def tenant_of(data_dir, memory_id) -> list[str]:
    store = SQLiteStore(data_dir / "capsule.db")
    try:
        return [t for t in (ROLE, SESSION) if any(p.memories for p in store.projects(t))]
    finally:
        store.close()


def test_dry_run_then_apply_then_nothing_left(tmp_path):
    memory_id = seed(tmp_path)
    dry = run(tmp_path, "--from-sessions")
    assert dry.returncode == 0, dry.stderr
    assert f"would move 1 memories, 1 projects from {SESSION} into {ROLE}" in dry.stdout
    assert "dry run: nothing changed" in dry.stdout and tenant_of(tmp_path, memory_id) == [SESSION]
    applied = json.loads(run(tmp_path, "--from-sessions", "--apply", "--json").stdout)
    assert applied == {
        "applied": True,
        "moves": [{"from": SESSION, "to": ROLE, "counts": {"memories": 1, "projects": 1}, "raised_limits": {}}],
    }
    assert tenant_of(tmp_path, memory_id) == [ROLE]
    again = run(tmp_path, "--from-sessions", "--apply")
    assert again.returncode == 0 and "nothing to merge" in again.stdout


def test_the_mode_must_be_named(tmp_path):
    proc = run(tmp_path)
    assert proc.returncode == 2 and "--from-sessions" in proc.stderr
