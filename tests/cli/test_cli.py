"""The ``capsule`` command end to end, as a subprocess on a real data folder."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import CLI, REPO, cli_env


def run(data_dir, *args, ok=True, stdin=None):
    proc = subprocess.run(
        [*CLI, *args], cwd=REPO, env=cli_env(data_dir), capture_output=True, text=True, input=stdin, timeout=120
    )
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_store_then_search_round_trips(tmp_path):
    stored = json.loads(
        run(
            tmp_path,
            "store",
            "Fixed ECONNREFUSED by using redis.railway.internal",
            "--project",
            "api",
            "--tag",
            "redis",
            "--outcome",
            "success",
            "--json",
        ).stdout
    )
    memory_id = stored["memory"]["id"]
    found = json.loads(run(tmp_path, "search", "redis ECONNREFUSED", "--project", "api", "--json").stdout)
    assert found["results"][0]["id"] == memory_id
    assert found["results"][0]["components"]["outcome"] == 0.1
    table = run(tmp_path, "search", "redis ECONNREFUSED", "--project", "api").stdout
    assert memory_id[:12] in table and "SCORE" in table
    then = json.loads(
        run(
            tmp_path,
            "search",
            "redis ECONNREFUSED",
            "--project",
            "api",
            "--json",
            "--as-of",
            "2000-01-01T00:00:00+00:00",
            "--min-relevance",
            "0.9",
        ).stdout
    )
    assert [h["id"] for h in then["results"]] == [memory_id]  # its keyword score is the best: 1.0
    assert then["results"][0]["components"]["time"] == 1.0  # stored "after" 2000: age 0


def test_every_memory_command(tmp_path):
    memory_id = json.loads(run(tmp_path, "store", "-", "--project", "p", "--json", stdin="from standard input").stdout)[
        "memory"
    ]["id"]
    assert json.loads(run(tmp_path, "pin", memory_id, "--json").stdout)["memory"]["pinned"] is True
    assert "pinned" in run(tmp_path, "list", "--project", "p", "--pinned").stdout.lower()
    run(tmp_path, "unpin", memory_id)
    run(tmp_path, "feedback", memory_id, "--helpful", "--context", "it worked")
    got = json.loads(run(tmp_path, "get", memory_id, "--json").stdout)["memory"]
    assert got["helpful"] == 1 and got["content"] == "from standard input"
    assert "Forgot" in run(tmp_path, "forget", memory_id, "--reason", "stale").stdout
    assert json.loads(run(tmp_path, "list", "--project", "p", "--json").stdout)["memories"] == []
    run(tmp_path, "restore", memory_id)
    projects = json.loads(run(tmp_path, "projects", "--json").stdout)["projects"]
    assert projects[0]["project"] == "p" and projects[0]["memories"] == 1
    assert "at most 5" in run(tmp_path, "limit", "5", "--project", "p").stdout


@pytest.mark.parametrize(
    "args",
    [
        ("get", "no-such-id"),
        ("store", "", "--project", "p"),
        ("search", "q", "--project", "p", "-k", "50"),
        ("store", "x", "--project", "p", "--meta", "$where=1"),
        ("store", "x", "--project", "p", "--meta", "novalue"),
    ],
)
def test_failures_exit_non_zero_with_one_line(tmp_path, args):
    proc = run(tmp_path, *args, ok=False)
    assert proc.returncode == 1 and proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("capsule: error:")]
    assert len(errors) == 1


def test_ingest_skips_binary_and_gitignored_files(tmp_path):
    src = tmp_path / "src"
    (src / "build").mkdir(parents=True)
    (src / ".gitignore").write_text("build/\n*.log\n")
    (src / "notes.md").write_text("Deploys use blue-green switching.\n")
    (src / "app.py").write_text("def main():\n    return 'hello'\n")
    (src / "debug.log").write_text("ignored log line\n")
    (src / "build" / "out.txt").write_text("ignored build output\n")
    (src / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    data = tmp_path / "data"
    summary = json.loads(run(data, "ingest", str(src), "--project", "repo", "--json").stdout)
    assert summary["files"] == 3  # notes.md, app.py, .gitignore
    assert [s["reason"] for s in summary["skipped"]] == ["binary"]
    found = json.loads(run(data, "search", "ignored", "--project", "repo", "--json", "--mode", "bm25").stdout)
    assert found["results"] == []
    again = json.loads(run(data, "ingest", str(src), "--project", "repo", "--json").stdout)
    assert again["deduplicated"] == 3 and again["stored"] == 0


def test_two_processes_storing_at_once_keep_the_limit_exactly(tmp_path):
    run(tmp_path, "limit", "10", "--project", "race")

    def writer(n: int) -> None:
        for i in range(8):
            run(tmp_path, "store", f"writer {n} memory {i}", "--project", "race")

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(writer, [1, 2]))
    listed = json.loads(run(tmp_path, "list", "--project", "race", "--limit", "100", "--json").stdout)
    assert len(listed["memories"]) == 10
    projects = json.loads(run(tmp_path, "projects", "--json").stdout)["projects"]
    assert projects[0]["forgotten"] == 6  # 16 stored, exactly 6 evicted


@pytest.mark.parametrize(
    "args, refused, suggested",
    [
        (["store", "Deploy with blue/green", "--project", "p", "--pinned"], "--pinned", "--pin"),
        (["store", "Deploy with blue/green", "--project", "p", "--outcom", "success"], "--outcom", "--outcome"),
        (["ingest", "README.md", "--project", "p", "--tags", "docs"], "--tags", "--tag"),
        (["search", "deploy", "--globl"], "--globl", "--global"),
        (["search", "deploy", "--proj", "p"], "--proj", "--project"),  # no abbreviations: they change meaning later
        (["solutions", "list", "--categry", "npm"], "--categry", "--category"),
        (["mcp", "--embeded"], "--embeded", "--embedded"),
    ],
)
def test_an_unknown_option_is_refused_with_the_nearest_one_and_changes_nothing(tmp_path, args, refused, suggested):
    proc = run(tmp_path, *args, ok=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"unknown option '{refused}' (did you mean '{suggested}'?)" in proc.stderr, proc.stderr
    assert json.loads(run(tmp_path, "projects", "--json").stdout)["projects"] == []


def test_a_stray_word_is_refused_by_name(tmp_path):
    proc = run(tmp_path, "get", "one-id", "another-id", ok=False)
    assert proc.returncode == 2 and "unexpected argument 'another-id'" in proc.stderr
