"""A folder of writes the hooks could not deliver, delivered by a later hook run.

A hook must finish fast and never block, so when the memory is unreachable (a network
failure, a 5xx, expired credentials) it cannot wait: the store or ingest request is written
here instead, one JSON file each, and the next hook run sends it first. A request the
server refuses as invalid is moved to ``rejected/`` (it would never succeed), so one bad
file cannot stall the rest.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Mapping

from capsule.errors import Forbidden, InvalidInput, Unauthorized, Unavailable

from .backends import Backend

# Failures worth retrying later: the request itself was fine.
RETRYABLE = (Unavailable, Unauthorized, Forbidden)
KINDS = ("store", "ingest", "capture")


class Spool:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def put(self, kind: str, request: Mapping[str, Any]) -> Path:
        """Keep one request for later (atomically: a half-written file is never read)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"kind": kind, "request": dict(request)}, default=str), "utf-8")
        os.replace(tmp, path)
        return path

    def pending(self) -> list[Path]:
        return sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []

    def drain(self, backend: Backend, limit: int = 20) -> tuple[int, int]:
        """Send up to ``limit`` kept requests, oldest first; stop at the first retryable failure.
        Returns (delivered, rejected)."""
        delivered = rejected = 0
        for path in self.pending()[:limit]:
            try:
                item = json.loads(path.read_text("utf-8"))
                send(backend, item["kind"], item["request"])
            except RETRYABLE:
                break
            except (InvalidInput, ValueError, KeyError, TypeError):
                (self.folder / "rejected").mkdir(exist_ok=True)
                os.replace(path, self.folder / "rejected" / path.name)
                rejected += 1
                continue
            path.unlink(missing_ok=True)
            delivered += 1
        return delivered, rejected


def send(backend: Backend, kind: str, request: Mapping[str, Any]) -> Any:
    if kind == "store":
        return backend.store(request)
    if kind == "ingest":
        return backend.ingest(request)
    if kind == "capture":
        from .capture_ops import capture_ops  # only hooks in capture mode pay for it

        return capture_ops(backend).capture(request)
    raise InvalidInput(f"unknown spooled request kind {kind!r}", field="kind")


__all__ = ["Spool", "send", "RETRYABLE"]
