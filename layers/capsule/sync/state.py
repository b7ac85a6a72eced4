"""Where a sync stopped, per peer and project: a small JSON file written atomically after
every batch (write to a temporary file, flush to disk, rename), so a sync killed at any
point resumes from the last batch the other side confirmed.

Each project also keeps when a push or a pull last finished (``push_at``, ``pull_at``, UTC,
RFC 3339); :func:`saved_states` reads every peer's file back for ``GET /v1/sync/status``."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SEEN_ALL = 2**62  # a position's seq meaning "every row of that version"


def state_path(folder: Path, peer: str, tenant: str) -> Path:
    name = hashlib.sha256(f"{peer}\x00{tenant}".encode()).hexdigest()[:24]
    return folder / f"{name}.json"


class Watermarks:
    """``push``: the local position last moved to the peer; ``pull``: the peer's position last moved here."""

    def __init__(self, path: Path, peer: str, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.path, self.peer, self.clock = path, peer, clock
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

    def finished(self, project: str, direction: str) -> None:
        """Note that a push or pull of ``project`` just ran to its end (saved with the next :meth:`save`)."""
        at = self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._data["projects"].setdefault(project, {})[f"{direction}_at"] = at

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(self._data, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)


def saved_states(folder: Path) -> list[dict[str, Any]]:
    """Every peer's saved state in ``folder``, by peer name: ``{"peer", "saved_at", "projects":
    {project: {"push", "pull", "push_at", "pull_at"}}}`` (``saved_at``: when the file was last
    written, UTC). A file that is not a state (half written, foreign) is left out."""
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text("utf-8"))
            saved = datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OSError, ValueError):
            continue
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("peer"), str)
            or not isinstance(data.get("projects"), dict)
        ):
            continue
        projects = {str(k): v for k, v in data["projects"].items() if isinstance(v, dict)}
        found.append({"peer": data["peer"], "saved_at": saved, "projects": projects})
    return sorted(found, key=lambda s: s["peer"])
