"""The BM25 postings of a project index and the statistics keyword scoring reads.

Postings are keyed by term hash (capsule.search.terms). ``_main`` is sorted by hash, one entry per
(term, row) with its count; ``_pending`` holds the rows added since, one entry per token,
unsorted: a write appends, a search scans them, and they are sorted into ``_main``
(:func:`capsule.search.postings._merged`) once there are enough to be worth it, or beside searches
(:meth:`IndexPostings.merge_postings`). The pure merging and the cache of term scores are in
:mod:`capsule.search.postings`; this part holds the index's own postings state and its look-ups.
"""

from __future__ import annotations

import numpy as np

from . import terms
from .indexrows import IndexRows
from .postings import _merged


class IndexPostings(IndexRows):
    """Each row's term hashes, by term, and BM25's statistics over the live rows."""

    _main: tuple[np.ndarray, np.ndarray, np.ndarray]
    _pending: list[tuple[np.ndarray, np.ndarray]]
    # The snapshot file whose postings these are, and the change count they were read or
    # written at (capsule.search.snapshot): see :meth:`postings_mark`.
    postings_file: tuple[int, str] | None

    def _clear_postings(self) -> None:
        self._main = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
        self._pending = []
        self._pending_n = 0
        self._scans = 0  # term look-ups left before a large pending part is sorted
        self._arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.postings_file = None

    def postings_mark(self) -> tuple:
        """Which postings the index holds: a snapshot's file while they are still that file's
        (the same in every process that loads it, so a tenant's table of them can be kept on
        disk: capsule.search.tenantpostings), else this index as its rows are now."""
        kept = self.postings_file
        if kept is not None and kept[0] == self.changes:
            return ("file", kept[1])
        return (self.serial, self.changes)

    # ---- adding --------------------------------------------------------------

    def _add_postings(self, start: int, documents: list[np.ndarray]) -> None:
        """The term hashes of new rows, kept unsorted until there are enough to sort."""
        lengths = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
        self.length[start : start + len(documents)] = lengths
        if not lengths.sum():
            return
        flat = np.concatenate(documents)
        self._add_pending(flat, np.repeat(np.arange(start, start + len(documents), dtype=np.int32), lengths))
        self._bytes += 12 * flat.size

    def _add_pending(self, flat: np.ndarray, rows: np.ndarray) -> None:
        self._pending.append((flat, rows))
        self._pending_n += flat.size
        self._arrays.clear()
        if len(self._pending) > 16:  # many small writes: one part to scan, not many
            self._pending = [
                (np.concatenate([h for h, _ in self._pending]), np.concatenate([r for _, r in self._pending]))
            ]

    def postings_count(self) -> int:
        """How many postings the index holds (sorted and pending; a pending one per token)."""
        return int(self._main[0].size) + self._pending_n

    def _merge(self) -> None:
        """Sort the pending postings into the main ones: one entry per (term, row) with its count."""
        if not self._pending:
            return
        self._main = _merged(self._main, self._pending)
        self._pending, self._pending_n = [], 0
        self._arrays.clear()

    def merge_postings(self) -> None:
        """:meth:`_merge` with the sorting done outside :attr:`lock` (for a background thread):
        its result is kept only if no row was added meanwhile."""
        with self.lock:
            main, pending = self._main, list(self._pending)
        if not pending:
            return
        merged = _merged(main, pending)
        with self.lock:
            if (
                self._main is main
                and len(self._pending) == len(pending)
                and all(a is b for a, b in zip(self._pending, pending))
            ):
                self._main = merged
                self._pending, self._pending_n = [], 0
                self._arrays.clear()

    def _renumber_postings(self, renumber: np.ndarray) -> None:
        """Rows renumbered (``renumber[old]``, -1: dropped), after :meth:`_merge`."""
        main_h, main_r, main_t = self._main
        new_rows = renumber[main_r]
        live = new_rows >= 0
        self._main = (main_h[live], new_rows[live].astype(np.int32), main_t[live])
        self._arrays.clear()

    # ---- reading -------------------------------------------------------------

    def postings_of(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Rows holding ``term`` and how often (dead rows included; the caller masks them).
        Sealed memories' postings are keyed (capsule.crypto): the term's keyed hashes too."""
        plain = self._postings_of_hash(terms.term_hash(term))
        variants = self.term_variants(term) if self.term_variants is not None else ()
        if not variants:
            return plain
        found = [plain, *(self._postings_of_hash(h) for h in variants)]
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])

    def _postings_of_hash(self, h: int) -> tuple[np.ndarray, np.ndarray]:
        cached = self._arrays.get(h)
        if cached is not None:
            return cached
        if self._pending_n > max(65536, self._main[0].size // 8):
            if self._scans > 0:
                self._scans -= 1
            else:
                self._merge()
        main_h, main_r, main_t = self._main
        lo, hi = np.searchsorted(main_h, h, "left"), np.searchsorted(main_h, h, "right")
        rows, tfs = [main_r[lo:hi]], [main_t[lo:hi]]
        for flat, at in self._pending:
            hit = at[flat == h]
            if hit.size:
                found, counts = np.unique(hit, return_counts=True)
                rows.append(found.astype(np.int32, copy=False))
                tfs.append(counts.astype(np.float32))
        cached = (rows[0], tfs[0]) if len(rows) == 1 else (np.concatenate(rows), np.concatenate(tfs))
        self._arrays[h] = cached
        return cached

    def alive_stats(self) -> tuple[int, float]:
        """How many rows are active and their summed keyword length (BM25's n and average
        length when nothing is filtered), computed once per change."""
        if self._stats is None:
            alive = self.alive[: self.n]
            self._stats = (int(alive.sum()), float(self.length[: self.n][alive].sum()))
        return self._stats

    def unembedded(self) -> int:
        """How many active rows have no vector of the index's model (stored while the embedder
        was down, or under another model before a switch): found by keyword until the backfill
        embeds them. Computed once per change."""
        if self._unembedded is None:
            self._unembedded = int((self.alive[: self.n] & ~self.has_vec[: self.n]).sum())
        return self._unembedded
