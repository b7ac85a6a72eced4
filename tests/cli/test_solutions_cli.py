"""``capsule solutions import`` with the Vector Bridge's fixpack files, as a subprocess on a real
data folder: each imports, ``show`` gives its unknown keys back, bad files import nothing."""

from __future__ import annotations

import json
import os

from tests.cli.test_cli import run
from tests.learning.fixpack_files import FILES, KEPT, in_file, kept_in, load


def _count(data_dir) -> int:
    return len(json.loads(run(data_dir, "solutions", "list", "--json").stdout)["solutions"])


def test_import_the_files_then_show_each_with_its_extras(tmp_path):
    imported = json.loads(run(tmp_path, "solutions", "import", *map(str, FILES), "--json").stdout)
    assert [r["kept_fields"] for r in imported] == [KEPT[f.name] for f in FILES]
    for path, result in zip(FILES, imported):
        assert result["created"] and ", ".join(KEPT[path.name]) in result["explanation"]
        shown = json.loads(run(tmp_path, "solutions", "show", result["id"], "--json").stdout)["solution"]
        for kept in KEPT[path.name]:
            assert kept_in(shown, kept) == in_file(load(path), kept), kept
    text = run(tmp_path, "solutions", "import", str(FILES[0])).stdout
    assert "already had the title" in text and "Kept unknown keys" in text
    assert _count(tmp_path) == len(FILES)


def test_bad_files_fail_naming_the_file_or_field_and_import_nothing(tmp_path):
    good = FILES[0].read_text("utf-8")
    (tmp_path / "truncated.json").write_text(good[: len(good) // 2])
    (tmp_path / "binary.json").write_bytes(os.urandom(200) + b"\xff\xfe")
    (tmp_path / "mistyped.json").write_text(
        json.dumps({**load(FILES[0]), "checks": [{"cmd": "x", "expect_exit_code": "0"}]})
    )
    for name, needle in [
        ("truncated.json", "is not JSON"),
        ("binary.json", "is not JSON"),
        ("mistyped.json", "checks.0.expect_exit_code"),
    ]:
        failed = run(tmp_path, "solutions", "import", str(tmp_path / name), ok=False)
        assert failed.returncode == 1 and needle in failed.stdout + failed.stderr, (name, failed.stdout, failed.stderr)
    assert _count(tmp_path) == 0
