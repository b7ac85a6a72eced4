"""``capsule export`` / ``capsule import`` end to end, as subprocesses on real data folders."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.cli.test_cli import run


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> tuple:
    """A data folder seeded through the CLI once for the module (six ``capsule`` runs); each test
    exports from its own copy of it, so no test sees another's changes."""
    folder = tmp_path_factory.mktemp("seeded") / "data"
    return folder, _seed(folder)


def _copy(seeded, data_dir) -> list[str]:
    folder, ids = seeded
    shutil.copytree(folder, data_dir)
    return ids


def _seed(data_dir) -> list[str]:
    ids = []
    for n in range(3):
        out = run(data_dir, "store", f"decision {n}: use WAL mode", "--project", "api", "--json").stdout
        ids.append(json.loads(out)["memory"]["id"])
    run(data_dir, "pin", ids[0])
    run(data_dir, "feedback", ids[1], "--helpful", "--context", "it worked")
    run(data_dir, "forget", ids[2], "--reason", "stale")
    return ids


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_export_import_export_round_trips_through_files(tmp_path, seeded):
    source, target = tmp_path / "a", tmp_path / "b"
    ids = _copy(seeded, source)
    out = tmp_path / "export.jsonl"
    run(source, "export", "-o", str(out))
    first = out.read_text()
    assert {r["id"] for r in _rows(first) if r["kind"] == "memory"} == set(ids)

    imported = run(target, "import", str(out)).stdout
    assert "imported 2 audit, 1 feedback, 3 memory;" in imported
    again = run(target, "import", str(out)).stdout
    assert "imported nothing" in again and "3 memory" in again
    second = run(target, "export").stdout  # standard output
    assert _rows(second)[1:] == _rows(first)[1:]  # the header's exported_at aside


def test_import_from_standard_input_and_one_project(tmp_path, seeded):
    source, target = tmp_path / "a", tmp_path / "b"
    _copy(seeded, source)
    run(source, "store", "elsewhere", "--project", "web")
    text = run(source, "export", "--project", "web").stdout
    result = json.loads(run(target, "import", "-", "--json", stdin=text).stdout)
    assert result["imported"] == {"memory": 1} and result["complete"]


def test_a_bad_line_names_its_line_and_field_and_exits_1(tmp_path, seeded):
    source, target = tmp_path / "a", tmp_path / "b"
    _copy(seeded, source)
    lines = run(source, "export").stdout.splitlines()
    row = json.loads(lines[2])
    row["colour"] = "red"
    lines[2] = json.dumps(row)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines[:-1]) + "\n")  # and no end line: cut short
    proc = run(target, "import", str(bad), ok=False)
    assert proc.returncode == 1
    assert "line 3: colour: unknown field 'colour'" in proc.stdout and "cut short" in proc.stdout
    assert "1 row(s) refused; input cut short" in proc.stderr


def test_a_file_that_is_not_an_export_is_refused_whole(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    proc = run(tmp_path / "b", "import", str(bad), ok=False)
    assert proc.returncode == 1 and "line 1" in proc.stderr
    missing = run(tmp_path / "b", "import", str(tmp_path / "nope.jsonl"), ok=False)
    assert missing.returncode == 1 and "cannot read" in missing.stderr
