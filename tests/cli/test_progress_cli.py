"""Progress on long commands: a bar on a terminal (a real pseudo-terminal), nothing when piped,
JSON lines when CAPSULE_PROGRESS=json."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess

import pytest

from tests.cli.test_cli import CLI, REPO, cli_env, run


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """Three memories stored through the CLI once for the module; each test gets its own copy."""
    folder = tmp_path_factory.mktemp("seeded") / "data"
    for n in range(3):
        run(folder, "store", f"decision {n}: use WAL mode", "--project", "api")
    return folder


def _seed(seeded, data_dir) -> None:
    shutil.copytree(seeded, data_dir, dirs_exist_ok=True)


def test_export_draws_a_bar_on_a_terminal(tmp_path, seeded):
    _seed(seeded, tmp_path)
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*CLI, "export", "-o", str(tmp_path / "out.jsonl")],
            cwd=REPO,
            env=cli_env(tmp_path),
            stderr=follower,
            stdout=subprocess.PIPE,
            timeout=120,
        )
        os.close(follower)
        follower = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0
    assert b"export (memories) [" in drawn and b"3/3 100%" in drawn and b"/s" in drawn


def test_piped_it_is_quiet_and_json_lines_when_asked(tmp_path, seeded):
    _seed(seeded, tmp_path)
    quiet = run(tmp_path, "export", "-o", str(tmp_path / "a.jsonl"))
    assert quiet.stderr.startswith("exported ")  # the summary only, no bar
    env = {**cli_env(tmp_path), "CAPSULE_PROGRESS": "json"}
    asked = subprocess.run(
        [*CLI, "import", str(tmp_path / "a.jsonl")], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert asked.returncode == 0, asked.stderr
    lines = [json.loads(line) for line in asked.stderr.splitlines()]
    assert lines[-1]["progress"] == "import (bytes)" and lines[-1]["final"] is True
    assert lines[-1]["done"] == lines[-1]["total"] == (tmp_path / "a.jsonl").stat().st_size


def test_a_piped_ingest_reports_its_progress_as_lines(tmp_path):
    """Issue 30: the first ingest piped was silent for 35-40 s; now a line at once, one every few
    seconds, what it waits for, and the last; stdout keeps the summary alone."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(3):
        (notes / f"n{n}.md").write_text(f"note {n}: rotate the token yearly\n")
    done = run(tmp_path / "data", "ingest", str(notes), "--project", "api")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ingested 3 files")
    lines = done.stderr.splitlines()
    assert lines[0] == "ingest (files) 1/3 33%"
    assert "ingest (files): opening the store and the embedder (the first run loads the model)" in lines
    assert lines[-1].startswith("ingest (files) 3/3 100%") and lines[-1].endswith("done")
