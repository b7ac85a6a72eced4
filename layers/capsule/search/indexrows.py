"""The rows of a project index: one array per signal ranking reads, the records by row, and
how they grow.

:class:`IndexRows` is the base every part of :class:`~capsule.search.index.ProjectIndex` builds on
(:mod:`.indexvectors`, :mod:`.indexpostings`, :mod:`.indexchanges`, :mod:`.indexload`,
:mod:`.indexsnapshot`, :mod:`.indexfilters`). It declares what they all read, so that a part is
readable on its own; the arrays stay plain attributes of the one index object, because the
search (capsule.search.hybrid) reads them in numpy expressions on its hot path, where a property or a
helper object would cost a call per access.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.records import MemoryRecord
from .indexrecords import Records
from .postings import TermScores
from .ranking import outcome_bonus

if TYPE_CHECKING:
    from .indexshape import Shape

# The arrays with one value per row (grown, compacted and exported together). The matrix and
# the sign codes have rows too; :mod:`.indexvectors` keeps them.
ROW_ARRAYS = (
    "alive",
    "has_vec",
    "key",
    "session",
    "author",
    "length",
    "occurred",
    "created",
    "helpful",
    "unhelpful",
    "outcome",
)


def grow(values: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, *values.shape[1:]), dtype=values.dtype)
    grown[: len(values)] = values
    return grown


def id_of(names: dict[str, int], name: object) -> int:
    """The number of a facet value (a session, an author) in ``names``; -1 for none."""
    if not isinstance(name, str) or not name:
        return -1
    return names.setdefault(name, len(names))


def facet(record: MemoryRecord, name: str):
    """A meta value an index groups by; a sealed memory's as its keyed tag (capsule.crypto), so
    its session and author names never reach a snapshot."""
    tags = getattr(record, "facet_tags", None)
    if tags is not None:
        return tags.get(name)
    return record.meta.get(name)


def outcome_of(meta: dict) -> float:
    return outcome_bonus(meta.get("outcome_status"))


class IndexRows:
    """Ids, records and per-row signals of one project's index, and their growth."""

    tenant: str
    project: str
    model_id: str | None
    fetch: Callable[[str, str, list[str]], dict[str, MemoryRecord]] | None
    eager_records: int
    lock: threading.RLock
    version: int
    serial: int  # this index's own number, never reused (ProjectIndex)
    changes: int  # how often its rows changed (_changed)
    spill_path: Callable[[], Path] | None
    term_variants: Callable[[str], list[int]] | None
    records: Records
    row_of: dict[str, int]
    n: int
    dead: int
    alive: np.ndarray
    has_vec: np.ndarray
    key: np.ndarray
    session: np.ndarray  # id of meta.session, -1: none
    author: np.ndarray  # id of meta.author, -1: none
    length: np.ndarray
    occurred: np.ndarray
    created: np.ndarray
    helpful: np.ndarray
    unhelpful: np.ndarray
    outcome: np.ndarray
    sessions: dict[str, int]
    authors: dict[str, int]
    _bytes: int  # about how much RAM the records and postings hold (see ProjectIndex.nbytes)
    _shape: Shape | None  # see ProjectIndex.shape
    # The vector part's, read where rows grow (:mod:`.indexvectors`).
    dim: int
    words: int
    _start_matrix: Callable[[int], None]
    _grow_matrix: Callable[[int], None]

    def _fetch(self, ids: list[str]) -> dict[str, MemoryRecord]:
        assert self.fetch is not None
        return self.fetch(self.tenant, self.project, ids)

    def _clear_rows(self, cap: int) -> None:
        self.records = Records(fetch=self._fetch if self.fetch else None)
        self.row_of = {}
        self.n = 0
        self.dead = 0
        self._bytes = 0
        self.alive = np.zeros(cap, dtype=bool)
        self.has_vec = np.zeros(cap, dtype=bool)
        self.length = np.zeros(cap, dtype=np.float64)
        self.occurred = np.zeros(cap, dtype=np.float64)
        self.created = np.zeros(cap, dtype=np.float64)
        self.helpful = np.zeros(cap, dtype=np.float64)
        self.unhelpful = np.zeros(cap, dtype=np.float64)
        self.outcome = np.zeros(cap, dtype=np.float64)
        self.key = np.zeros(cap, dtype=np.int64)
        self.session = np.full(cap, -1, dtype=np.int64)
        self.author = np.full(cap, -1, dtype=np.int64)
        self.sessions = {}
        self.authors = {}
        self._shape = None

    def _changed(self) -> None:
        """Forget what was derived from the rows for searches (they changed), and count it."""
        self.changes += 1
        self._stats: tuple[int, float] | None = None
        self._unembedded: int | None = None  # see IndexPostings.unembedded
        self.scores = TermScores()
        # What a search derives from every row's signals (capsule.search.hybrid), kept until they change.
        self.derived: dict[str, np.ndarray | bool] = {}

    @property
    def active(self) -> int:
        return self.n - self.dead

    def _reserve(self, extra: int, dim: int) -> None:
        """Room for ``extra`` more rows; the matrix takes ``dim`` if it has no width yet."""
        need = self.n + extra
        if dim and not self.dim:
            self._start_matrix(dim)
        if need <= len(self.alive):
            return
        cap = max(need, 2 * len(self.alive))
        for name in ROW_ARRAYS:
            setattr(self, name, grow(getattr(self, name), cap))
        self._grow_matrix(cap)

    def _keep_rows(self, keep: np.ndarray, renumber: np.ndarray) -> None:
        """Only the rows ``keep`` of the per-row arrays and records, renumbered."""
        for name in ROW_ARRAYS:
            setattr(self, name, getattr(self, name)[keep].copy())
        self.records = self.records.keep(keep)
        self.row_of = {memory_id: int(renumber[row]) for memory_id, row in self.row_of.items()}
        self._bytes = int(self._bytes * keep.size / max(self.n, 1))
        self.n, self.dead = keep.size, 0
        self._shape = None
