"""What sync needs of a store beyond the memory and transfer contracts: the memories of a
project changed after a position, in the order they changed, and whole rows written back.

A position is ``(version, seq)``: the project version that stamped the row (see
:mod:`capsule.store.base`) and its place among the rows of that version. Every write that
changes a memory stamps it with a newer version, so a reader that went up to a position
and asks again from there sees every change made since, once (a row changed twice is seen
at its latest version only). Forgotten memories are included (a forget travels).
:meth:`SyncStore.replace_memories` writes whole rows (with their ids) in one write that
stamps the project's next version: a row of that id is replaced (derived data, counters and
indexes follow), one that does not exist is inserted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..core.records import MemoryRecord

Position = tuple[int, int]


@runtime_checkable
class SyncStore(Protocol):
    def changed_page(
        self, tenant: str, project: str, *, after: Position | None, limit: int
    ) -> list[tuple[Position, MemoryRecord]]:
        """Up to ``limit`` memories (with embeddings, forgotten ones too) stamped after ``after``,
        in (version, seq) order, each with its position."""

    def current(self, tenant: str, ids: Sequence[str]) -> dict[str, tuple[Position, MemoryRecord]]:
        """The stored rows of these ids (with embeddings, forgotten ones too) and their positions;
        unknown ids are left out."""

    def replace_memories(
        self, tenant: str, project: str, records: Sequence[MemoryRecord], *, quiet_since: int | None = None
    ) -> tuple[int, bool]:
        """Write these whole rows of one project atomically (replacing the rows of the same ids,
        inserting the others) under the project's next version. Returns that version, and whether
        the project's version just before this write was ``quiet_since`` (nothing else was
        written since then), read in the same write."""
