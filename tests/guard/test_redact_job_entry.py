"""The redact job (issue 37) is one of the scheduled jobs: ``capsule jobs run redact`` (with its
budget), the Lambda handler EventBridge calls, and the scheduler inside ``capsule serve``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import functions.jobs as lambda_jobs
from capsule.config import Settings
from capsule.embedders.hashing import HashingEmbedder
from capsule.jobs.scheduled import JOB_NAMES
from capsule.runtime.learning import build_jobs
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from capsule_cli.scheduler import INTERVALS_S

ROOT = Path(__file__).resolve().parents[2]
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq9wZ2"


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT)]),
        "CAPSULE_DATA_DIR": str(data_dir),
        "CAPSULE_EMBEDDER": "hashing",
    }
    return subprocess.run(
        [sys.executable, "-m", "capsule_cli", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_redact_is_a_scheduled_job():
    assert "redact" in JOB_NAMES and "redact" in INTERVALS_S and "redact" in lambda_jobs.BUDGET_KEYS
    assert callable(lambda_jobs.redact_handler)


def test_the_lambda_handler_runs_it_with_its_budget(tmp_path):
    store = SQLiteStore(tmp_path / "c.db")
    store.migrate()
    service = MemoryService(
        store, HashingEmbedder(), settings=Settings(data_dir=tmp_path, embedder="hashing", secrets_policy="flag")
    )
    service.store_memory("t", {"project": "p", "content": f"key {STRIPE}"})
    service.settings = Settings(data_dir=tmp_path, embedder="hashing")  # the deployment now redacts
    report = lambda_jobs.run("redact", {"max_memories": 10, "other": 1}, jobs=build_jobs(service))
    assert report["job"] == "redact" and report["complete"] and report["counts"]["redacted"] == 1
    assert json.loads(json.dumps(report)) == report
    assert STRIPE not in service.list_memories("t", {"project": "p"}).memories[0].content
    store.close()


def test_capsule_jobs_run_redact(tmp_path):
    job = _cli(tmp_path / "data", "jobs", "run", "redact", "--max-memories", "100", "--json")
    assert job.returncode == 0, job.stderr
    report = json.loads(job.stdout)
    assert report["job"] == "redact" and report["complete"]
    wrong = _cli(tmp_path / "data", "jobs", "run", "redact", "--batch", "2")
    assert wrong.returncode == 1 and "batch" in wrong.stderr
