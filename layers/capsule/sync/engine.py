"""``capsule sync``: move the memories changed since the last sync between two peers, both
ways, for chosen projects.

A peer is anything with :class:`Peer`'s three calls (the local store: :class:`LocalPeer`; a
remote ``capsule serve`` or hosted API: the CLI's HTTP peer). Each direction reads the
source's changes after its watermark a page at a time, has the target merge each batch
(:func:`capsule.sync.exchange.apply`), and moves the watermark only after the target
answered, saving it at once: a second run moves nothing, a run killed at any point (or
stopped by a failing peer) resumes where the last confirmed batch ended, and memory holds
one page. When the target had changed nothing else since the sender last saw it, the
target's new version is taken as seen, so the rows just moved do not come back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..service.memory_service import MemoryService
from . import exchange
from . import models as sm
from .state import SEEN_ALL, Watermarks

BATCH_ITEMS = 100
BATCH_BYTES = 768 * 1024  # under the API's 1 MB body limit with the envelope
MAX_PAGES = 1_000_000  # a bound on every loop; a real sync ends long before


class Peer(Protocol):
    name: str

    def changes(self, project: str, after: list[int] | None, limit: int) -> sm.ChangesPage: ...
    def apply(self, request: dict[str, Any]) -> sm.ApplyResult: ...
    def projects(self) -> list[str]: ...


class LocalPeer:
    def __init__(self, service: MemoryService, tenant: str, name: str = "local") -> None:
        self.service, self.tenant, self.name = service, tenant, name

    def changes(self, project: str, after: list[int] | None, limit: int) -> sm.ChangesPage:
        return exchange.changes(
            self.service,
            self.tenant,
            project,
            after=tuple(after) if after else None,  # type: ignore[arg-type]
            limit=limit,
        )

    def apply(self, request: dict[str, Any]) -> sm.ApplyResult:
        return exchange.apply(self.service, self.tenant, request)

    def projects(self) -> list[str]:
        return [p.project for p in self.service.projects(self.tenant).projects]


@dataclass
class Moved:
    project: str
    direction: str  # push | pull
    sent: int = 0
    applied: int = 0
    unchanged: int = 0
    votes: int = 0
    conflicts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SyncReport:
    moves: list[Moved] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(getattr(m, name) for m in self.moves)

    def explanation(self) -> str:
        parts = [
            f"{m.direction} {m.project}: {m.applied} written, {m.unchanged} already so, {len(m.conflicts)} conflict(s)"
            for m in self.moves
        ]
        return "; ".join(parts) or "nothing to sync"


def _chunks(
    items: list[dict[str, Any]], positions: list[list[int]]
) -> Iterator[tuple[list[dict[str, Any]], list[int]]]:
    """Batches of at most BATCH_ITEMS items and about BATCH_BYTES, each with its last position."""
    batch: list[dict[str, Any]] = []
    size = 0
    last: list[Any] = []
    for item, position in zip(items, positions):
        length = len(json.dumps(item, default=str))
        if batch and (len(batch) >= BATCH_ITEMS or size + length > BATCH_BYTES):
            yield batch, last
            batch, size = [], 0
        batch.append(item)
        size += length
        last = position
    if batch:
        yield batch, last


Progress = Callable[[int], None]


def move(
    source: Peer, target: Peer, project: str, marks: Watermarks, direction: str, *, progress: Progress | None = None
) -> Moved:
    """Move one project's changes from ``source`` to ``target``; ``direction`` names the
    source's watermark (push: local -> remote; pull: remote -> local)."""
    other = "pull" if direction == "push" else "push"
    moved = Moved(project, direction)
    after = marks.get(project, direction)
    for _ in range(MAX_PAGES):
        page = source.changes(project, after, BATCH_ITEMS)
        if after is not None and page.version < after[0]:  # the source was replaced: start over
            after = None
            continue
        for batch, last in _chunks(page.items, page.positions):
            result = target.apply({"project": project, "items": batch, "base": marks.get(project, other)})
            after = last
            marks.set(project, direction, after)
            if result.quiet:
                marks.set(project, other, [result.version, SEEN_ALL])
            marks.save()
            moved.sent += len(batch)
            moved.applied += result.applied
            moved.unchanged += result.unchanged
            moved.votes += result.votes
            moved.conflicts += [
                {**c.model_dump(), "project": project, "direction": direction} for c in result.conflicts
            ]
            if progress:
                progress(len(batch))
        if not page.more:
            break
    marks.finished(project, direction)
    marks.save()
    return moved


def run_sync(
    local: Peer,
    remote: Peer,
    projects: list[str] | None,
    direction: str,
    marks: Watermarks,
    *,
    progress: Progress | None = None,
) -> SyncReport:
    """Push, pull or both (push first) for each project (None: every project of either side)."""
    if direction not in ("push", "pull", "both"):
        raise ValueError(direction)
    chosen = projects or sorted(set(local.projects()) | set(remote.projects()))
    report = SyncReport()
    for project in chosen:
        if direction in ("push", "both"):
            report.moves.append(move(local, remote, project, marks, "push", progress=progress))
        if direction in ("pull", "both"):
            report.moves.append(move(remote, local, project, marks, "pull", progress=progress))
    return report
