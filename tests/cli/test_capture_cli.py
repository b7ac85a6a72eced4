"""``capsule capture``, ``candidates``, ``approve``, ``reject`` and ``eval capture`` as subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import run

EVENTS = "\n".join(
    json.dumps(e)
    for e in [
        {"role": "user", "text": "Can you check why the build is slow?"},
        {"role": "assistant", "text": "The root cause was a stale .pyc file from the old package layout."},
        {
            "role": "assistant",
            "text": "We decided to keep the hashing embedder as the offline default because it needs no download.",
        },
    ]
)
SET = Path(__file__).parents[1] / "capture" / "coding_sessions.json"


def test_capture_then_approve_edited_and_reject(tmp_path):
    out = json.loads(run(tmp_path, "capture", "-", "--project", "api", "--json", stdin=EVENTS).stdout)
    first, second = [c["id"] for c in out["candidates"]]
    listed = run(tmp_path, "candidates", "--project", "api").stdout
    assert first in listed and second in listed
    approved = json.loads(
        run(
            tmp_path, "approve", first, "--text", "Stale .pyc files broke the imports.", "--tag", "python", "--json"
        ).stdout
    )
    assert approved["memory"]["content"] == "Stale .pyc files broke the imports."
    twice = run(tmp_path, "approve", first, ok=False)
    assert twice.returncode == 1 and "already approved" in twice.stderr
    assert "rejected" in run(tmp_path, "reject", second, "--reason", "obvious").stdout
    assert run(tmp_path, "reject", "ab" * 16, ok=False).stderr.strip().endswith(f"no candidate '{'ab' * 16}'")
    again = json.loads(run(tmp_path, "capture", "-", "--project", "api", "--json", stdin=EVENTS).stdout)
    assert again["candidates"] == [] and len(again["skipped"]) == 2
    bad = run(tmp_path, "capture", "-", "--project", "api", ok=False, stdin='{"role": "user", "text": "x", "txt": "y"}')
    assert bad.returncode == 1 and "txt" in bad.stderr


def test_eval_capture_reports_each_split_of_the_labelled_set(tmp_path):
    report = json.loads(run(tmp_path, "eval", "capture", str(SET), "--json").stdout)
    assert set(report["splits"]) == {"dev", "held_out", "all"}
    held = report["splits"]["held_out"]
    assert held["events"] >= 80 and held["positives"] > 0
    assert held["precision"] >= 0.8 and held["recall"] >= 0.7  # the target, on the part never tuned on
