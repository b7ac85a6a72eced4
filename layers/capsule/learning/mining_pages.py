"""Mining's reads in bounded memory (issue 32): a tenant's active memories a page at a time,
whatever the tenant's size, instead of ``candidates(tenant, None, ...)`` read whole.

Each project of the tenant is walked newest first on the store's list index (SQLite
``memories_recent``, MongoDB ``recent``), :data:`PAGE` memories per read. Mining walks the
tenant twice: once to keep the ``max_memories`` most recent failures (a bounded heap: what
:func:`capsule.learning.mining.occurrences` keeps of the whole tenant, the same memories), and
once, after clustering them, to weigh each success memory as evidence as its page passes.
Memory held: one page, the kept failures and the clusters, at any tenant size.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from ..core.clock import to_epoch
from ..core.records import MemoryRecord
from . import mining

PAGE = 500


def readable(record: MemoryRecord) -> bool:
    """A memory mining may read: not sealed at rest (a pattern keeps its terms in the clear)."""
    return not getattr(record, "sealed", "")


def pages(memories: Any, tenant: str, *, page: int = PAGE) -> Iterator[list[MemoryRecord]]:
    """Every active memory of the tenant that mining may read, ``page`` at a time (project by
    project, newest first). A store with ``outcome_page`` (SQLite) gives of each page only the
    memories whose meta names an outcome, which are all :func:`latest_failures` and
    :func:`successes` keep: the same memories in the same pages, the others never made records.
    It is looked up on the store's class, so a wrapper that opens what it reads (a sealed store)
    is read through its own ``list``."""
    lean = getattr(type(memories), "outcome_page", None) is not None
    for project in sorted(memories.change_markers(tenant, None)):
        after = None
        while True:
            if lean:
                rows, count, last = memories.outcome_page(tenant, project, after=after, limit=page)
            else:
                rows = memories.list(tenant, project, pinned_only=False, after=after, limit=page)
                count = len(rows)
                last = (to_epoch(rows[-1].created_at), rows[-1].id) if rows else None
            if rows:
                yield rows
            if count < page:
                break
            after = last


def latest_failures(memories: Any, tenant: str, limit: int, *, page: int = PAGE) -> list[MemoryRecord]:
    """The tenant's ``limit`` failure/error memories latest by (occurred_at, id), as
    :func:`mining.occurrences` would keep them of the whole tenant."""
    heap: list[tuple[float, str, MemoryRecord]] = []
    for rows in pages(memories, tenant, page=page):
        for record in rows:
            if not (mining.is_failure(record) and readable(record)):
                continue
            key = (to_epoch(record.occurred_at), record.id, record)
            if len(heap) < limit:
                heapq.heappush(heap, key)
            elif key[:2] > heap[0][:2]:
                heapq.heapreplace(heap, key)
    return [item[2] for item in heap]


def successes(memories: Any, tenant: str, *, page: int = PAGE) -> Iterator[list[MemoryRecord]]:
    """The tenant's success memories, a page at a time."""
    for rows in pages(memories, tenant, page=page):
        found = [r for r in rows if mining.is_success(r) and readable(r)]
        if found:
            yield found
