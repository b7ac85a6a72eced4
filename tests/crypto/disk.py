"""Where an embedded store keeps things, read back as bytes to look for plaintext."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def files_holding(folder: Path, secrets: list[bytes]) -> dict[str, list[bytes]]:
    """Every file under ``folder`` (the database, its WAL, snapshots, key file...) holding any of
    ``secrets`` (also as UTF-16, which SQLite never uses, and lowercased)."""
    found: dict[str, list[bytes]] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        hits = [s for s in secrets if s in data or s.lower() in data.lower()]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found


def rows_holding(database: Path, secrets: list[str]) -> list[str]:
    """``table.column`` of every text value in the database holding any of ``secrets``: the
    memories, their versions, the audit log, the caches, every table there is."""
    found = []
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = [c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')]
            for column in columns:
                for (value,) in conn.execute(f'SELECT "{column}" FROM "{table}"'):
                    text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
                    if any(s.lower() in text.lower() for s in secrets):
                        found.append(f"{table}.{column}")
    return sorted(set(found))
