"""``capsule eval locomo`` on a tiny LoCoMo-shaped file made here (the real data is never copied)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from capsule import InvalidInput
from capsule_cli.evaluate import load_locomo, normalise_evidence, parse_session_date, scores

ROOT = Path(__file__).resolve().parents[2]


def tiny_locomo(path: Path) -> Path:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started learning the cello."},
                {
                    "speaker": "Ana",
                    "dia_id": "D1:3",
                    "text": "Biscuit chewed my running shoes.",
                    "img_url": ["x"],
                    "blip_caption": "a photo of a chewed shoe",
                },
            ],
            "session_2_date_time": "10:04 am on 19 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "My cello recital went well."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Biscuit learned to sit."},
            ],
        },
        "qa": [
            {"question": "What is the name of Ana's puppy?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
            {
                "question": "Which instrument does Ben play?",
                "answer": "cello",
                "evidence": ["D1:2; D2:01"],
                "category": 1,
            },
            {"question": "When was the recital?", "answer": "June 2023", "evidence": ["D:2:1"], "category": 2},
            {"question": "What would Ana like?", "answer": "dogs", "evidence": [], "category": 3},
            {
                "question": "What did Ben's puppy chew?",
                "adversarial_answer": "shoes",
                "evidence": ["D1:3"],
                "category": 5,
            },
        ],
    }
    path.write_text(json.dumps([sample]))
    return path


def test_evidence_ids_are_normalised():
    assert normalise_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D8:6"]) == ["D8:6", "D9:17", "D11:26", "D30:5"]


def test_session_dates_are_read():
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on 13 September, 2023").hour == 0
    with pytest.raises(InvalidInput):
        parse_session_date("yesterday")


def test_turns_become_memories(tmp_path):
    conv = load_locomo(tiny_locomo(tmp_path / "locomo.json"))[0]
    first, third = conv.turns[0], conv.turns[2]
    assert first.content == "[1:56 pm on 8 May, 2023] Ana: I adopted a puppy named Biscuit."
    assert (first.author, first.session, first.dia_id) == ("Ana", "session 1", "D1:1")
    assert third.content.endswith("[image: a photo of a chewed shoe]")
    assert conv.turns[3].occurred_at.date().isoformat() == "2023-06-19"
    assert [q.evidence for q in conv.questions][:3] == [["D1:1"], ["D1:2", "D2:1"], ["D2:1"]]


def test_metrics():
    got = scores(["D1:2", "D1:1", "D2:1"], ["D1:1", "D2:1"])
    assert got["R@1"] == 0 and got["R@5"] == 1.0 and got["Hit@5"] == 1.0
    assert got["NDCG@10"] == pytest.approx((1 / 1.5849625 + 1 / 2) / (1 + 1 / 1.5849625), abs=1e-6)


def test_the_command_reports_every_mode_and_category(tmp_path):
    data = tiny_locomo(tmp_path / "locomo.json")
    out = tmp_path / "report.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT)]),
        "CAPSULE_EMBEDDER": "hashing",
    }
    run = subprocess.run(
        [sys.executable, "-m", "capsule_cli", "eval", "locomo", str(data), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "embedder: hashing-v1-384" in run.stdout
    report = json.loads(out.read_text())
    assert set(report["modes"]) == {"hybrid", "vector", "bm25"}
    hybrid = report["modes"]["hybrid"]
    assert hybrid["overall (1-4)"]["n"] == 3 and hybrid["5 adversarial"]["n"] == 1
    assert report["skipped_no_evidence"] == 1
    assert hybrid["4 single-hop"]["R@10"] == 1.0  # "puppy" names one turn
    assert report["data"] == {"path": str(data), "conversations": 1, "turns": 5, "questions": 5}


def test_a_bad_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT)])}
    run = subprocess.run(
        [sys.executable, "-m", "capsule_cli", "eval", "locomo", str(bad), "--embedder", "hashing"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 1 and "cannot read LoCoMo data" in run.stderr
