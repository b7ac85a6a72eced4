"""A folder of writes the hooks could not deliver, delivered by a later hook run.

A hook must finish fast and never block, so when the memory is unreachable (a network
failure, a 5xx, expired credentials) it cannot wait: the store or ingest request is written
here instead, one JSON file each, and the next hook run sends it first. A request the
server refuses as invalid is moved to ``rejected/`` (it would never succeed), so one bad
file cannot stall the rest.

A hook also writes each request here *before* sending it (``*.inflight``), and removes it once
delivered: Claude Code ends a hook that outlives its timeout, and a request cut short that way
must not be lost. An in-flight file older than :data:`INFLIGHT_STALE_S` (longer than any hook
may run) belongs to a run that was ended, and is delivered like the others; the same memory
stored twice is harmless (a store of the same content within 48 hours is stored once).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from capsule.core.errors import Forbidden, InvalidInput, Unauthorized, Unavailable

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks start without the backends' imports (or typing)
    from collections.abc import Mapping
    from typing import Any

    from .backends import Backend

# Failures worth retrying later: the request itself was fine.
RETRYABLE = (Unavailable, Unauthorized, Forbidden)
KINDS = ("store", "ingest", "capture")
INFLIGHT = ".inflight"
INFLIGHT_STALE_S = 120.0  # Claude Code's hook timeouts (capsule install) are 15-30 s


class Spool:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def put(self, kind: str, request: Mapping[str, Any], *, inflight: bool = False) -> Path:
        """Keep one request for later (atomically: a half-written file is never read); with
        ``inflight``, for as long as this run is sending it (:meth:`release`, :meth:`done`)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{time.time_ns():020d}-{os.urandom(4).hex()}{INFLIGHT if inflight else '.json'}"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"kind": kind, "request": redacted(request)}, default=str), "utf-8")
        os.replace(tmp, path)
        return path

    def release(self, path: Path) -> Path:
        """An in-flight request that could not be sent now: the next run sends it."""
        kept = path.with_suffix(".json")
        os.replace(path, kept)
        return kept

    def done(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def pending(self, *, now: float | None = None) -> list[Path]:
        """Requests to send, oldest first: those kept, and those whose run was ended mid-send."""
        if not self.folder.is_dir():
            return []
        cutoff = (time.time() if now is None else now) - INFLIGHT_STALE_S
        abandoned = [p for p in self.folder.glob(f"*{INFLIGHT}") if _mtime(p) < cutoff]
        return sorted([*self.folder.glob("*.json"), *abandoned], key=lambda p: p.name)

    def drain(self, backend: Backend, limit: int = 20) -> tuple[int, int]:
        """Send up to ``limit`` kept requests, oldest first; stop at the first retryable failure.
        Returns (delivered, rejected)."""
        delivered = rejected = 0
        for path in self.pending()[:limit]:
            try:
                item = json.loads(path.read_text("utf-8"))
                send(backend, item["kind"], item["request"])
            except FileNotFoundError:  # an in-flight file its own run delivered meanwhile
                continue
            except RETRYABLE:
                break
            except (InvalidInput, ValueError, KeyError, TypeError):
                (self.folder / "rejected").mkdir(exist_ok=True)
                os.replace(path, self.folder / "rejected" / path.with_suffix(".json").name)
                rejected += 1
                continue
            path.unlink(missing_ok=True)
            delivered += 1
        return delivered, rejected


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # delivered meanwhile by its own run
        return float("inf")


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


def redacted(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the spool keeps it on disk: secrets replaced by ``[REDACTED:<kind>]``
    (capsule.guard, the service's default), since a spooled write waits in a plain file. A
    project whose policy flags or refuses secrets gets the redacted text from a spooled write."""
    from capsule.guard.policy import Policies
    from capsule.guard.tree import TreeReport, guard_tree

    policies, found = Policies(secrets="redact", pii="flag"), TreeReport()
    # The texts a store or ingest keeps; the project and path name where it goes.
    return {
        key: guard_tree(value, policies, found, key=key) if key in GUARDED else value for key, value in request.items()
    }


GUARDED = ("content", "text", "explanation", "meta")
