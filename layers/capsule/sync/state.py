"""Where a sync stopped, per peer and project: a small JSON file written atomically after
every batch (write to a temporary file, flush to disk, rename), so a sync killed at any
point resumes from the last batch the other side confirmed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

SEEN_ALL = 2**62  # a position's seq meaning "every row of that version"


def state_path(folder: Path, peer: str, tenant: str) -> Path:
    name = hashlib.sha256(f"{peer}\x00{tenant}".encode()).hexdigest()[:24]
    return folder / f"{name}.json"


class Watermarks:
    """``push``: the local position last moved to the peer; ``pull``: the peer's position last moved here."""

    def __init__(self, path: Path, peer: str) -> None:
        self.path, self.peer = path, peer
        self._data: dict[str, Any] = {"peer": peer, "projects": {}}
        if path.exists():
            loaded = json.loads(path.read_text("utf-8"))
            if isinstance(loaded, dict) and isinstance(loaded.get("projects"), dict):
                self._data = loaded

    def get(self, project: str, direction: str) -> list[int] | None:
        value = self._data["projects"].get(project, {}).get(direction)
        return list(value) if value else None

    def set(self, project: str, direction: str, position: list[int] | None) -> None:
        self._data["projects"].setdefault(project, {})[direction] = position

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(self._data, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
