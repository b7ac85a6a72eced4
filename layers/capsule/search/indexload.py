"""Loading a whole project into an empty index from a store's columns
(:class:`~capsule.core.records.IndexColumns`): one join of the vectors, no records built.

A project below the store's threshold arrives with its vectors (the matrix is then the store's
buffer itself, when it can be); a larger one with packed rows (:func:`capsule.search.signbits.pack_row`:
key, times, sign bits) and its vectors deferred: the matrix is allocated but not written, in RAM
whose pages come a row at a time or, above ``RESIDENT_MAX``, in a file (:mod:`capsule.search.matrix`),
and :mod:`.indexvectors` fills it. Kept apart from :mod:`.indexchanges` because a load fills
every array at once from columns, where a change adds records one by one.
"""

from __future__ import annotations

import logging
import mmap

import numpy as np

from ..core.records import DeferredVectors, IndexColumns
from .indexpostings import IndexPostings
from .indexrows import id_of, outcome_of
from .indexvectors import IndexVectors
from .matrix import RESIDENT_MAX, Spill
from .signbits import Packed, sign_codes

logger = logging.getLogger("capsule.search.indexload")

EAGER_RECORDS = 20_000  # a smaller project loaded as columns fetches its records at once


def _lazy_zeros(rows: int, dim: int) -> np.ndarray:
    """A zero float32 matrix whose memory the OS provides a small page at a time as rows are
    written. numpy asks for huge pages for large arrays: then writing a few scattered rows
    would make the OS clear (and first gather) 2 MB for each, most of the matrix."""
    size = rows * dim * 4
    if size < 1 << 22 or not hasattr(mmap, "MADV_NOHUGEPAGE"):
        return np.zeros((rows, dim), dtype=np.float32)
    memory = mmap.mmap(-1, size)
    memory.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(memory, dtype=np.float32).reshape(rows, dim)


class IndexLoading(IndexVectors, IndexPostings):
    """An empty index filled from a store's columns."""

    def _load_columns(self, c: IndexColumns) -> None:
        """Fill an empty index from a store's columns: one join of the vectors, no records built."""
        n = len(c.ids)
        if not n:
            return
        packed = Packed(c, n) if c.deferred is not None else None
        if packed is not None:
            sizes = packed.head["size"].astype(np.int64)
        else:
            sizes = np.fromiter(c.vector_sizes, dtype=np.int64, count=n)
        usable, dim = self._usable_columns(c, sizes)
        self.n = n
        self.dim, self.words = dim, (dim + 63) // 64
        self.has_vec = usable
        if packed is not None:
            self._load_codes(c.deferred, packed, usable)
        else:
            self._load_vectors(c, sizes, usable)
        self._load_signals(c, packed)
        self.row_of = dict(zip(c.ids, range(n)))
        self.records.extend(c.ids)
        self._load_terms(c)
        if n <= self.eager_records and self.fetch is not None:
            self.records.load_all()

    def _usable_columns(self, c: IndexColumns, sizes: np.ndarray) -> tuple[np.ndarray, int]:
        """Rows with a vector of this index's model, and the width of the matrix: vectors of
        another size than the largest are left out, as in :meth:`_append`."""
        n = len(sizes)
        usable = sizes > 0
        if c.models.count(self.model_id) != n:  # count: a C loop, where all(...) is a Python one
            usable &= np.fromiter((model == self.model_id for model in c.models), dtype=bool, count=n)
        dim = int(sizes[usable].max()) // 4 if usable.any() else 0
        usable &= sizes == 4 * dim
        return usable, dim

    def _load_signals(self, c: IndexColumns, packed: Packed | None) -> None:
        """What ranking reads of every row: keys, times (from the packed rows when there are
        some), feedback and facets."""
        n = len(c.ids)
        if packed is not None:
            self.key = packed.head["key"].copy()
            self.occurred = packed.head["occurred"].copy()
            self.created = packed.head["created"].copy()
        else:
            self.key = np.fromiter(c.keys, dtype=np.int64, count=n)
            self.occurred = np.fromiter(c.occurred, dtype=np.float64, count=n)
            self.created = np.fromiter(c.created, dtype=np.float64, count=n)
        self.alive = np.ones(n, dtype=bool)
        self.helpful = np.fromiter(c.helpful, dtype=np.float64, count=n)
        self.unhelpful = np.fromiter(c.unhelpful, dtype=np.float64, count=n)
        self.outcome = np.zeros(n, dtype=np.float64)
        self.session = np.full(n, -1, dtype=np.int64)
        self.author = np.full(n, -1, dtype=np.int64)
        for row, meta in enumerate(c.metas):
            if meta:
                self.outcome[row] = outcome_of(meta)
                self.session[row] = id_of(self.sessions, meta.get("session"))
                self.author[row] = id_of(self.authors, meta.get("author"))

    def _load_terms(self, c: IndexColumns) -> None:
        """Every row's term hashes, as one pending part of the postings."""
        n = len(c.ids)
        lengths = np.fromiter(map(len, c.terms), dtype=np.int64, count=n) // 8
        self.length = lengths.astype(np.float64)
        flat = np.frombuffer(b"".join(c.terms), dtype="<i8").astype(np.int64, copy=False)
        self._add_pending(flat, np.repeat(np.arange(n, dtype=np.int32), lengths))
        self._scans = 32  # the first search scans; sorting waits until the index is searched again
        self._bytes += 12 * flat.size + 200 * n

    def _load_vectors(self, c: IndexColumns, sizes: np.ndarray, usable: np.ndarray) -> None:
        n, dim = len(sizes), self.dim
        self.filled = np.ones(n, dtype=bool)
        everything = np.frombuffer(c.vectors, dtype="<f4")
        if dim and usable.all() and everything.size == n * dim:
            self.matrix = self._lazy = everything.reshape(n, dim)  # the common case: no copy at all
        else:
            self.matrix = np.zeros((n, dim), dtype=np.float32)
            if dim:
                starts = (np.cumsum(sizes) - sizes) // 4
                picks = starts[usable][:, None] + np.arange(dim)
                self.matrix[usable] = everything[picks]
        self.row_codes = sign_codes(self.matrix, self.words) if dim else np.zeros((n, 0), dtype=np.uint64)
        self.codes = np.ascontiguousarray(self.row_codes.T)

    def _load_codes(self, deferred: DeferredVectors, packed: Packed, usable: np.ndarray) -> None:
        """Sign bits now, vectors later: the matrix is allocated but not touched (the OS maps
        its pages when they are first written), each row filled when first needed."""
        n = len(usable)
        spill = None
        if n * self.dim * 4 > RESIDENT_MAX and self.spill_path is not None:
            try:
                spill = Spill(self.spill_path(), n, self.dim)
            except OSError as exc:  # a full disk: RAM, as for a smaller index
                logger.warning("could not spill the vectors of %s/%s to a file: %s", self.tenant, self.project, exc)
        if spill is not None:
            self._spill = spill
            self.matrix = spill.matrix
        else:
            self.matrix = self._lazy = _lazy_zeros(n, self.dim)
        self.filled = ~usable
        self.deferred = deferred if usable.any() else None
        self.row_codes = packed.codes(usable, self.words)
        self.codes = np.ascontiguousarray(self.row_codes.T)
