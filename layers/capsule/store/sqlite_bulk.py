"""Bulk insert for SQLite (``MemoryStore.insert_bulk``): many memories of one project in one
transaction, the rows :meth:`SQLiteStore.insert` writes, made for batches of thousands.

What makes a large batch cheap here, row for row:

- the rows' values are made together (:func:`bulk_params`): the packed rows' sign bits of
  every vector in one numpy pass, keyword hashes a word at a time (``terms.encode``), one
  ``executemany``;
- the project's active count and the eviction run once per batch, not per 1,000 rows
  (the count reads every active row of the project: at a million rows, tens of ms);
- the connection's page cache is raised for the batch (and put back after): the indexes
  keyed by content hash and id take rows at random places, so a batch touches pages all
  over them; with SQLite's default cache (2 MB) dirty pages spill to the WAL during the
  transaction and the same page is written many times. With the cache, each page a batch
  touches is written once, at commit.

Dedupe keeps :meth:`SQLiteStore.insert`'s rule (a record whose content hash matches an
active memory created at or after ``dedupe_after``, earlier rows of the batch included): with
``dedupe_after`` the rows are checked and written one by one, as there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np

from ..core.clock import to_epoch
from ..core.records import MemoryRecord, WriteOutcome
from ..search.index import pack_row, sign_codes, stable_key
from ..search.signbits import PACKED

# Page cache of a bulk write (KiB, SQLite's negative form): enough for the pages 50,000 rows
# touch in the random-key indexes of a store of millions.
BULK_CACHE_KIB = 256 * 1024


def bulk_params(records: Sequence[MemoryRecord]) -> list[tuple[Any, ...]]:
    """Each record's ``sqlite.record_params`` (INSERT_MEMORY's values but the version), made
    for the whole batch at once; the same values (tests/store/test_bulk_insert.py pins it)."""
    from .sqlite_rows import record_params

    keys = [stable_key(r.id) for r in records]
    occurred = [to_epoch(r.occurred_at) for r in records]
    created = [to_epoch(r.created_at) for r in records]
    packed = _packed_rows(records, keys, occurred, created)
    # A row left unpacked (a vector of its own size) is packed by record_params, the row's own way.
    return [record_params(r, row) for r, row in zip(records, packed)]


def _packed_rows(
    records: Sequence[MemoryRecord], keys: list[int], occurred: list[float], created: list[float]
) -> list[bytes | None]:
    """:func:`capsule.search.signbits.pack_row` of the records whose vectors share the batch's most
    common size, in one pass (None for the others)."""
    sizes = [0 if r.embedding is None else int(np.asarray(r.embedding).size) for r in records]
    common = max(set(sizes), key=sizes.count) if sizes else 0
    chosen = [i for i, size in enumerate(sizes) if size == common]
    out: list[bytes | None] = [None] * len(records)
    if not common or not chosen:
        for i in chosen:
            out[i] = pack_row(keys[i], occurred[i], created[i], None)
        return out
    words = (common + 63) // 64
    head = np.zeros(len(chosen), dtype=PACKED)
    head["format"], head["size"] = 1, 4 * common
    head["key"] = [keys[i] for i in chosen]
    head["occurred"] = [occurred[i] for i in chosen]
    head["created"] = [created[i] for i in chosen]
    matrix = np.stack([np.asarray(records[i].embedding, dtype=np.float32) for i in chosen])
    table = np.concatenate(
        (head.view(np.uint8).reshape(len(chosen), PACKED.itemsize), sign_codes(matrix, words).view(np.uint8)), axis=1
    )
    for i, row in zip(chosen, table):
        out[i] = row.tobytes()
    return out


@contextmanager
def larger_cache(conn) -> Iterator[None]:
    """The connection's page cache raised to :data:`BULK_CACHE_KIB` for a bulk write, then
    put back (SQLite frees the pages beyond the old size)."""
    before = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute(f"PRAGMA cache_size = {-BULK_CACHE_KIB}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(before)}")


def insert_bulk(
    store, records: Sequence[MemoryRecord], *, limit: int, dedupe_after: datetime | None, actor: str
) -> WriteOutcome:
    """``SQLiteStore.insert`` for a large batch of one project (see the module's doc)."""
    from .sqlite_rows import INSERT_MEMORY

    outcome = WriteOutcome(limit=limit)
    if not records:
        return outcome
    tenant, project = records[0].tenant, records[0].project
    now = to_epoch(records[0].created_at)
    rows = bulk_params(records)  # before the transaction: the write lock is held only to write
    conn = store._conn()
    with larger_cache(conn), store._write(rows=len(records)) as conn:
        version = store._next_version(conn, tenant, project, now)
        params = [(*row, version) for row in rows]
        if dedupe_after is None:
            conn.executemany(INSERT_MEMORY, params)
            outcome.inserted.extend(r.id for r in records)
        else:
            store._insert_rows(conn, records, params, dedupe_after, outcome)
        store._settle_limit(conn, outcome, tenant, project, limit, now, actor, version)
    return outcome
