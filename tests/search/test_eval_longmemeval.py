"""``capsule eval longmemeval`` on a tiny LongMemEval-shaped file made here (the real data is never copied)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from capsule import InvalidInput
from capsule_cli.evaluate_longmemeval import load_longmemeval, parse_date

ROOT = Path(__file__).resolve().parents[2]


def item(qid, kind, question, date, sessions, dates):
    return {
        "question_id": qid,
        "question_type": kind,
        "question": question,
        "question_date": date,
        "answer": "?",
        "answer_session_ids": [f"s{qid}{i}" for i in range(len(sessions))],
        "haystack_session_ids": [f"s{qid}{i}" for i in range(len(sessions))],
        "haystack_dates": dates,
        "haystack_sessions": sessions,
    }


def tiny(path: Path) -> Path:
    filler = {"role": "assistant", "content": "Here are some general tips about many things you could try."}
    path.write_text(
        json.dumps(
            [
                item(
                    "q1",
                    "single-session-user",
                    "What is my puppy called?",
                    "2023/05/30 (Tue) 10:00",
                    [[{"role": "user", "content": "I adopted a puppy named Biscuit.", "has_answer": True}, filler]],
                    ["2023/05/20 (Sat) 02:21"],
                ),
                item(
                    "q2",
                    "temporal-reasoning",
                    "Which book did I finish a week ago?",
                    "2023/06/08 (Thu) 09:00",
                    [
                        [{"role": "user", "content": "I finished the book Dune today.", "has_answer": True}, filler],
                        [{"role": "user", "content": "I finished the book Emma today."}, filler],
                    ],
                    ["2023/06/01 (Thu) 08:00", "2023/04/01 (Sat) 08:00"],
                ),
                item(
                    "q3",
                    "multi-session",
                    "What car do I drive?",
                    "2023/06/08 (Thu) 09:00",
                    [[{"role": "user", "content": "I like tea."}, filler]],
                    ["2023/06/01 (Thu) 08:00"],
                ),
                item(
                    "q4_abs",
                    "multi-session",
                    "What boat do I sail?",
                    "2023/06/08 (Thu) 09:00",
                    [[{"role": "user", "content": "I sail a lot.", "has_answer": True}, filler]],
                    ["2023/06/01 (Thu) 08:00"],
                ),
            ]
        )
    )
    return path


def test_dates_are_read():
    assert parse_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    assert parse_date("2023/05/20") == datetime(2023, 5, 20, tzinfo=UTC)
    with pytest.raises(InvalidInput):
        parse_date("May 20")


def test_turns_are_memories_dated_by_their_session(tmp_path):
    q1, q2, q3, q4 = load_longmemeval(tiny(tmp_path / "lme.json"))
    assert q1.relevant == ["q1/0/0"] and q3.relevant == [] and q4.abstention and not q1.abstention
    first = q2.turns[0]
    assert (first.author, first.session, first.relevant) == ("user", "sq20", True)
    assert q2.turns[1].occurred_at == datetime(2023, 6, 1, 8, 0, 1, tzinfo=UTC)
    assert q2.asked_at == datetime(2023, 6, 8, 9, 0, tzinfo=UTC)


def run_cli(tmp_path, *args):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT)]),
        "CAPSULE_EMBEDDER": "hashing",
    }
    return subprocess.run(
        [sys.executable, "-m", "capsule_cli", "eval", "longmemeval", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_the_command_reports_every_mode_and_type(tmp_path):
    data, out = tiny(tmp_path / "lme.json"), tmp_path / "report.json"
    run = run_cli(tmp_path, str(data), "--out", str(out), "--cache", str(tmp_path / "cache.db"))
    assert run.returncode == 0, run.stderr
    assert "embedder: hashing-v1-384" in run.stdout and "temporal-reasoning" in run.stdout
    report = json.loads(out.read_text())
    assert set(report["modes"]) == {"hybrid", "vector", "bm25"} and report["skipped_no_evidence"] == 1
    assert report["skipped_abstention"] == 1
    hybrid = report["modes"]["hybrid"]
    assert hybrid["overall"]["n"] == 2 and hybrid["single-session-user"]["R@1"] == 1.0
    # Searched as of the question's date, "a week ago" is 1 June: Dune, not Emma.
    assert hybrid["temporal-reasoning"]["R@1"] == 1.0 and report["as_of"] == "question date"
    again = json.loads(run_cli(tmp_path, str(data), "--json", "--mode", "bm25", "--wall-clock").stdout)
    assert set(again["modes"]) == {"bm25"} and again["as_of"] == "wall clock"


def test_a_bad_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    run = run_cli(tmp_path, str(bad), "--embedder", "hashing")
    assert run.returncode == 1 and "LongMemEval" in run.stderr
