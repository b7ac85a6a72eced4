"""Keeping a project index current: a store's :class:`~capsule.core.records.ChangeSet` applied.

A warm index reads only the rows changed since the version it holds. A row whose text and
vector did not change keeps its place (only what ranking reads of it is refreshed); any other
changed row is removed and added again at the end, with its vector, sign codes and postings.
Removed rows stay as dead rows until they are half the index, then every part drops them at
once (:meth:`IndexChanges._compact`). Kept beside the index, not in it, as the one place where
rows come and go.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..core.clock import to_epoch
from ..core.records import ChangeSet, MemoryRecord
from . import terms
from .indexload import IndexLoading
from .indexrows import facet, id_of, outcome_of
from .signbits import stable_key


class IndexChanges(IndexLoading):
    """Rows added, refreshed, removed and compacted away."""

    _clear: Callable[[], None]  # ProjectIndex._clear: every part empty

    def apply(self, changes: ChangeSet) -> None:
        """Bring the index to ``changes.version``. The index takes over the records given."""
        self._shape = None
        self._changed()
        if changes.reset:
            self._clear()
        if changes.columns is not None:
            self._load_columns(changes.columns)
        for memory_id in changes.removed:
            self._kill(memory_id)
        fresh: list[MemoryRecord] = []
        for record in changes.changed:
            row = self.row_of.get(record.id)
            if row is not None and self._same_text_and_vector(row, record):
                record.embedding = None
                self.records[row] = record
                self._set_meta(row, record)
            else:
                self._kill(record.id)
                fresh.append(record)
        self._append(fresh)
        self.version = max(self.version, changes.version) if not changes.reset else changes.version
        if self.dead > 1000 and self.dead > self.n // 2:
            self._compact()

    def _same_text_and_vector(self, row: int, record: MemoryRecord) -> bool:
        if not self.records.loaded(row) or not self.filled[row]:
            return False  # only its id is held: re-add the row rather than read the old one
        old = self.records[row]
        if old is None or old.content != record.content:
            return False
        usable = self._usable(record)
        if usable != bool(self.has_vec[row]):
            return False
        return not usable or np.array_equal(self.matrix[row], record.embedding)

    def _usable(self, record: MemoryRecord) -> bool:
        return record.embedding is not None and record.model == self.model_id and record.embedding.size > 0

    def _kill(self, memory_id: str) -> None:
        row = self.row_of.pop(memory_id, None)
        if row is not None:
            self.alive[row] = False
            self.records[row] = None
            self.dead += 1

    def _append(self, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        dims = {r.embedding.size for r in records if self._usable(r)}
        dim = self.dim or (max(dims) if dims else 0)
        self._reserve(len(records), dim)
        start = self.n
        vec_rows, vectors = [], []
        for offset, record in enumerate(records):
            row = start + offset
            self.row_of[record.id] = row
            self.records.append(record)
            if self._usable(record) and record.embedding.size == self.dim:
                vec_rows.append(row)
                vectors.append(record.embedding)
            record.embedding = None  # the index owns the records it is given; the matrix holds the vector
        self._set_signals(slice(start, start + len(records)), records)
        self._add_postings(start, [terms.record_hashes(r) for r in records])
        self._bytes += sum(2 * len(r.content) + 300 for r in records)
        self.n = start + len(records)
        if vectors:
            self._store_vectors(np.asarray(vec_rows), np.stack(vectors).astype(np.float32, copy=False))

    def _set_signals(self, rows: slice, records: Sequence[MemoryRecord]) -> None:
        """What ranking reads of new rows: alive, their keys, times, feedback and facets."""
        self.alive[rows] = True
        self.key[rows] = [stable_key(r.id) for r in records]
        self.occurred[rows] = [to_epoch(r.occurred_at) for r in records]
        self.created[rows] = [to_epoch(r.created_at) for r in records]
        self.helpful[rows] = [r.helpful for r in records]
        self.unhelpful[rows] = [r.unhelpful for r in records]
        self.outcome[rows] = [outcome_of(r.meta) for r in records]
        self.session[rows] = [id_of(self.sessions, facet(r, "session")) for r in records]
        self.author[rows] = [id_of(self.authors, facet(r, "author")) for r in records]

    def _set_meta(self, row: int, record: MemoryRecord) -> None:
        """Refresh what ranking reads of a row whose text and vector did not change."""
        self.occurred[row] = to_epoch(record.occurred_at)
        self.created[row] = to_epoch(record.created_at)
        self.helpful[row] = record.helpful
        self.unhelpful[row] = record.unhelpful
        self.outcome[row] = outcome_of(record.meta)
        self.session[row] = id_of(self.sessions, facet(record, "session"))
        self.author[row] = id_of(self.authors, facet(record, "author"))

    def _compact(self) -> None:
        """Drop the dead rows: every array keeps its live rows and the postings are renumbered."""
        self._merge()
        keep = np.flatnonzero(self.alive[: self.n])
        renumber = np.full(self.n, -1, dtype=np.int64)
        renumber[keep] = np.arange(keep.size)
        self._keep_vectors(keep)
        self._renumber_postings(renumber)
        self._keep_rows(keep, renumber)
