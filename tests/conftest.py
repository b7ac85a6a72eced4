"""Shared fixtures: a frozen clock, a real SQLite store in a temp folder, and the service."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from capsule.clock import FrozenClock
from capsule.config import Settings
from capsule.embedders import HashingEmbedder
from capsule.service import MemoryService
from capsule.store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parent.parent

# The CDK synthesizer (jsii) runs on Node.js; without it even importing aws_cdk fails. A machine
# without Node leaves the infra tests out (the report header says so); CI always runs them.
NO_NODE = shutil.which("node") is None and not os.environ.get("CI")
collect_ignore = ["infra"] if NO_NODE else []


def pytest_report_header(config):
    return "infra tests left out: the CDK synthesizer needs Node.js on PATH" if NO_NODE else None


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock()


@pytest.fixture
def sqlite_store(tmp_path):
    store = SQLiteStore(tmp_path / "capsule.db")
    store.migrate()
    yield store
    store.close()


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path, embedder="hashing", retention_limit=100)


@pytest.fixture
def service(sqlite_store, clock, settings) -> MemoryService:
    return MemoryService(sqlite_store, HashingEmbedder(), clock=clock, settings=settings)


def cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """Environment for running ``python -m mcp_client`` from this checkout, no install needed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPSULE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "layers"), str(REPO)])
    env["CAPSULE_DATA_DIR"] = str(data_dir)
    env["CAPSULE_EMBEDDER"] = "hashing"
    env.update(extra)
    return env


CLI = [sys.executable, "-m", "mcp_client"]
