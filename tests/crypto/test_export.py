"""An export of sealed memories carries them sealed: no plaintext in the file (a decrypting export
for an authorized caller is not built yet)."""

from __future__ import annotations

from tests.serve.server import capsule

TEXT = "phone albertine.crowhurst@mossgrave.io about the spindlewick invoice"


def test_an_export_keeps_sealed_memories_sealed(tmp_path):
    data = tmp_path / "data"
    stored = capsule("store", "--project", "p", TEXT, data_dir=data)
    assert stored.returncode == 0, stored.stderr
    out = tmp_path / "export.jsonl"
    exported = capsule("export", "--project", "p", "--output", str(out), data_dir=data)
    assert exported.returncode == 0, exported.stderr
    body = out.read_text()
    assert "cme1." in body
    assert not [w for w in ("albertine", "crowhurst", "mossgrave", "spindlewick") if w in body.lower()]
    found = capsule("search", "--project", "p", "spindlewick", data_dir=data)
    assert found.returncode == 0 and TEXT in found.stdout, found.stderr
