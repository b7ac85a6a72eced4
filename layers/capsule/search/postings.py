"""BM25 postings of an index: merging the pending ones in, and the cache of term scores."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np


def _merged(
    main: tuple[np.ndarray, np.ndarray, np.ndarray], pending: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Main postings (sorted by term hash; one entry per (term, row) with its count) with the
    pending ones (one entry per token) sorted in."""
    flat = np.concatenate([h for h, _ in pending])
    rows = np.concatenate([r for _, r in pending])
    order = np.argsort(flat, kind="stable")  # rows stay ascending within a term
    flat, rows = flat[order], rows[order]
    first = np.ones(flat.size, dtype=bool)
    first[1:] = (flat[1:] != flat[:-1]) | (rows[1:] != rows[:-1])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, flat.size)).astype(np.float32)
    main_h, main_r, main_t = main
    flat = np.concatenate((main_h, flat[starts]))
    rows = np.concatenate((main_r, rows[starts]))
    tfs = np.concatenate((main_t, counts))
    order = np.argsort(flat, kind="stable")
    return flat[order], rows[order], tfs[order]


class TermScores:
    """Each query term's BM25 contribution (its active rows and their scores) for an unfiltered
    search, kept until the index changes: frequent terms recur across queries, and their
    contributions are most of what keyword scoring costs. The least recently used go first
    beyond ``max_bytes``."""

    def __init__(self, max_bytes: int = 32 << 20) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[tuple, tuple[np.ndarray | None, np.ndarray, float]] = OrderedDict()

    def get(self, key: tuple) -> tuple[np.ndarray | None, np.ndarray, float] | None:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def fit(self, rows: int) -> None:
        """Room for a dozen frequent terms' scores over ``rows`` rows: a large index's queries
        mostly share a few frequent words, and each costs a pass over every row to compute."""
        self.max_bytes = max(self.max_bytes, 12 * 8 * rows)

    def put(self, key: tuple, rows: np.ndarray | None, scores: np.ndarray, peak: float) -> None:
        """``rows`` None: ``scores`` holds one score per row of the index; ``peak``: the largest."""
        size = (0 if rows is None else rows.nbytes) + scores.nbytes
        if size > self.max_bytes // 4 or key in self._items:
            return
        self._items[key] = (rows, scores, peak)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (old_rows, old_scores, _) = self._items.popitem(last=False)
            self.bytes -= (0 if old_rows is None else old_rows.nbytes) + old_scores.nbytes
