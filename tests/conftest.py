"""Shared fixtures: a frozen clock, a real SQLite store in a temp folder, and the service."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.embedders import HashingEmbedder
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parent.parent

# The CDK synthesizer (jsii) runs on Node.js; without it even importing aws_cdk fails. A machine
# without Node leaves the infra tests out (the report header says so); CI always runs them.
NO_NODE = shutil.which("node") is None and not os.environ.get("CI")
collect_ignore = ["infra"] if NO_NODE else []


def not_installed(reason: str, *, module: bool = False) -> None:
    """A tool a test drives is not on this machine: skip here, naming it (``./scripts/test`` run as
    root installs it, or says how); under CI (``CI`` set, as .ci/run does) fail instead: CI runs
    every test but the real-MongoDB ones (CAPSULE_TEST_MONGODB_URI)."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run this test, not skip it (./scripts/test installs it as root)", pytrace=False)
    pytest.skip(f"{reason} (./scripts/test installs it when run as root)", allow_module_level=module)


def pytest_report_header(config):
    return "infra tests left out: the CDK synthesizer needs Node.js on PATH" if NO_NODE else None


# pytest-xdist hands a worker one unit of tests at a time (addopts: -n auto, pyproject.toml): a
# module, so its module-scoped servers and browsers start once; and the modules sharing a costly
# session fixture form one unit, so it is made once per run, not once per worker.
SHARED_SESSION = {
    "cdk-synth": (
        "tests/infra/test_data_keys.py",
        "tests/infra/test_operations.py",  # `template`
        "tests/infra/test_search_threshold.py",
        "tests/infra/test_stack.py",
    ),
}


# The units that take longest (a minute or more on two cores, --durations), handed out first so that
# the run does not end with one worker busy on one of them and the other idle. xdist's own order
# (most tests first) would start these single-test units last.
FIRST = (
    "tests/serve/test_fuzz.py",
    "tests/serve/test_readme_examples.py",
    "tests/infra/test_build_layer.py",
    "tests/serve/test_sync_http.py",
    "cdk-synth",
    "tests/console/test_console_screens.py",
    "tests/cli/test_cli.py",
    "tests/infra/test_cdk_cli.py",
    "tests/learning/test_learning_jobs.py",
    "tests/cli/test_newcomer_cli.py",
    "tests/console/test_console.py",
    "tests/cli/test_transfer_cli.py",
    "tests/crypto/test_serve_at_rest.py",
    "tests/mcp/test_client_keepalive.py",
    "tests/search/test_golden_results.py",
)


def xdist_unit(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return next((unit for unit, modules in SHARED_SESSION.items() if module in modules), module)


TERMINAL = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """Tell each xdist worker the terminal size variables this process has (usually none)."""
    node.workerinput["terminal_env"] = {name: os.environ.get(name) for name in TERMINAL}


def pytest_configure(config):
    # An xdist worker has COLUMNS=80 and LINES=24 of its own; a `capsule` subprocess would inherit them
    # and cut its tables at 80 columns (tests/crypto/test_export.py failed so). Keep what the run had.
    given = getattr(config, "workerinput", {}).get("terminal_env")
    if given is not None:
        for name, value in given.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: no error when it is not installed
def pytest_xdist_make_scheduler(config, log):
    """Units by ``xdist_unit``. (Not ``--dist loadgroup`` with marks: pytest 9.2 ignores the test ids
    xdist 3.8 rewrites for it, so the marks would group nothing.)"""
    from xdist.scheduler import LoadScopeScheduling

    if config.getvalue("dist") == "each":  # every test on every worker: nothing to group
        return None

    class ByUnit(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:  # the first call: the queue is complete
                self.ordered = True
                for unit in reversed(FIRST):
                    if unit in self.workqueue:
                        self.workqueue.move_to_end(unit, last=False)
            super()._assign_work_unit(node)

    return ByUnit(config, log)


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
    """Environment for running ``python -m capsule_cli`` from this checkout, no install needed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPSULE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "layers"), str(REPO)])
    env["CAPSULE_DATA_DIR"] = str(data_dir)
    env["CAPSULE_EMBEDDER"] = "hashing"
    env.update(extra)
    return env


CLI = [sys.executable, "-m", "capsule_cli"]
