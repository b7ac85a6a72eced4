"""The Claude Code hook commands, run as Claude Code runs them: a subprocess fed the recorded
hook JSON on stdin, against a real embedded store."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mcp_support import FIXTURES, capsule_command, capsule_env, hook_input, new_data_dir

from capsule import Settings
from mcp_client.backends import EmbeddedBackend

PROJECT = "shop"  # the name of the recorded hook inputs' cwd, /home/dev/shop (the default-project rule)


def run_hook(name: str, stdin: str, data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        capsule_command("hook", name, *args),
        input=stdin,
        capture_output=True,
        text=True,
        env=capsule_env(data_dir, **env),
        timeout=60,
    )


def stored(data_dir: Path, project: str = PROJECT):
    backend = EmbeddedBackend.from_settings(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        return backend.list_memories({"project": project, "limit": 100}).memories
    finally:
        backend.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return new_data_dir(tmp_path)


def test_stop_stores_each_digest_with_agent_task_and_outcome(data_dir):
    done = run_hook("stop", hook_input("stop.json"), data_dir)
    assert done.returncode == 0, done.stderr
    assert "2 digest(s), 2 stored" in done.stderr
    memories = {m.meta["task_id"]: m for m in stored(data_dir)}
    assert set(memories) == {"SHOP-142", "SHOP-143"}
    fix = memories["SHOP-142"]
    assert fix.meta["author"] == "backend-dev"
    assert fix.meta["outcome_status"] == "success"
    assert fix.meta["type"] == "digest"
    assert fix.meta["session"] == "5f0c2a1e-8d3b-4b7a-9c61-2f4e7d9a1b30"
    assert fix.meta["files"] == ["shop/db.py", "shop/checkout.py"]
    assert "BEGIN IMMEDIATE" in fix.content
    assert memories["SHOP-143"].meta["outcome_status"] == "failure"
    assert memories["SHOP-143"].meta["author"] == "test-writer"

    again = run_hook("stop", hook_input("stop.json"), data_dir)  # Stop fires after every turn
    assert again.returncode == 0 and "0 stored, 2 already stored" in again.stderr
    assert len(stored(data_dir)) == 2


def test_post_compact_stores_the_summary_with_its_inferred_outcome(data_dir):
    done = run_hook("post-compact", hook_input("post_compact.json"), data_dir)
    assert done.returncode == 0, done.stderr
    assert "outcome failure" in done.stderr
    [memory] = stored(data_dir)
    assert memory.meta["type"] == "compaction-summary"
    assert memory.meta["outcome_status"] == "failure"
    assert "compaction-auto" in memory.meta["tags"]
    assert "sandbox key is missing" in memory.content


def test_post_compact_without_a_summary_reads_it_from_the_transcript(data_dir):
    done = run_hook("post-compact", hook_input("post_compact_no_summary.json"), data_dir)
    assert done.returncode == 0, done.stderr
    [memory] = stored(data_dir)
    assert memory.meta["outcome_status"] == "success"
    assert "all tests pass now" in memory.content


def _seed(data_dir: Path) -> list[str]:
    backend = EmbeddedBackend.from_settings(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        ids = [
            backend.store({"project": PROJECT, "content": text}).memory.id
            for text in [
                "Checkout deadlock: concurrent SQLite writes deadlock unless each write uses BEGIN IMMEDIATE in shop/db.py",
                "SQLite busy timeout is 5 s; do not retry writes in the app",
                "The logo is blue and the font is Inter",
            ]
        ]
    finally:
        backend.close()
    return ids


def test_pre_tool_use_injects_the_best_memories_before_a_task_call(data_dir):
    ids = _seed(data_dir)
    done = run_hook("pre-tool-use", hook_input("pre_tool_use_task.json"), data_dir)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert "permissionDecision" not in output  # it informs; it never decides
    context = output["additionalContext"]
    bullets = [line for line in context.splitlines() if line.startswith("- ")]
    assert 1 <= len(bullets) <= 3
    assert ids[0] in bullets[0] and "BEGIN IMMEDIATE" in bullets[0]
    assert "The logo is blue" not in context  # below the score threshold
    assert len(context) <= 1200


def test_pre_tool_use_respects_the_threshold_and_the_size_budget(data_dir):
    _seed(data_dir)
    strict = run_hook("pre-tool-use", hook_input("pre_tool_use_task.json"), data_dir, "--min-score", "0.99")
    assert strict.returncode == 0 and strict.stdout == ""
    tight = run_hook("pre-tool-use", hook_input("pre_tool_use_task.json"), data_dir, "--max-chars", "200")
    assert tight.returncode == 0 and tight.stdout, tight.stderr
    context = json.loads(tight.stdout)["hookSpecificOutput"]["additionalContext"]
    assert 0 < len(context) <= 200 and "SQLite writes deadlock" in context  # an excerpt that fits


def test_pre_tool_use_ignores_other_tools(data_dir):
    _seed(data_dir)
    done = run_hook("pre-tool-use", hook_input("pre_tool_use_bash.json"), data_dir)
    assert done.returncode == 0 and done.stdout == ""


@pytest.mark.parametrize(
    "name, stdin",
    [
        ("stop", "{not json"),
        ("post-compact", "[]"),
        ("stop", json.dumps({"transcript_path": str(FIXTURES / "missing.jsonl")})),
        ("pre-tool-use", hook_input("pre_tool_use_task.json")),  # with an unreachable memory API
    ],
)
def test_every_failure_is_reported_and_exits_zero(data_dir, name, stdin):
    done = run_hook(name, stdin, data_dir, CAPSULE_MEMORY_URL="http://127.0.0.1:9", CAPSULE_AUTH="none")
    assert done.returncode == 0
    assert done.stdout == ""
    assert f"capsule hook {name}:" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_usage_error_does_not_block_either(data_dir):
    done = run_hook("nonsense", "{}", data_dir)
    assert done.returncode == 0 and "usage error" in done.stderr


def test_writes_wait_in_the_spool_while_the_memory_is_unreachable(data_dir):
    down = run_hook(
        "stop", hook_input("stop.json"), data_dir, CAPSULE_MEMORY_URL="http://127.0.0.1:9", CAPSULE_AUTH="none"
    )
    assert down.returncode == 0 and "0 stored" in down.stderr
    assert "memory unreachable: 2 write(s) kept for the next run" in down.stderr
    assert len(list((data_dir / "hook-spool").glob("*.json"))) == 2
    assert stored(data_dir) == []

    back = run_hook("post-compact", hook_input("post_compact.json"), data_dir)  # the next hook, memory reachable
    assert back.returncode == 0 and "delivered 2 write(s) kept by earlier runs" in back.stderr
    assert list((data_dir / "hook-spool").glob("*.json")) == []
    kinds = sorted(m.meta["type"] for m in stored(data_dir))
    assert kinds == ["compaction-summary", "digest", "digest"]  # nothing was lost


class FlakyBackend:
    """A backend whose store fails as told: the spool's delivery rules, in process."""

    def __init__(self, failure=None):
        self.failure = failure
        self.stored = []

    def store(self, request):
        if self.failure:
            raise self.failure
        self.stored.append(request)
        return request


def test_the_spool_keeps_order_stops_at_an_outage_and_sets_aside_the_invalid(tmp_path):
    from capsule.core.errors import InvalidInput, Unavailable
    from mcp_client.spool import Spool

    spool = Spool(tmp_path / "spool")
    for n in range(3):
        spool.put("store", {"project": "p", "content": f"note {n}"})
    assert spool.drain(FlakyBackend(Unavailable("down"))) == (0, 0)
    assert len(spool.pending()) == 3  # an outage keeps everything

    backend = FlakyBackend()
    assert spool.drain(backend, limit=2) == (2, 0)
    assert [r["content"] for r in backend.stored] == ["note 0", "note 1"]  # oldest first, bounded

    assert spool.drain(FlakyBackend(InvalidInput("bad"))) == (0, 1)
    assert spool.pending() == [] and len(list((tmp_path / "spool" / "rejected").iterdir())) == 1
