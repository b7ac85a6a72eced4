"""Raw BM25 of a large index summed only over the rows the query's strongest terms reach.

Summing every query term into one score per row costs a pass over the whole index per term
(at 1M rows, 8 MB read and written for each frequent word, and a scatter over every row that
holds a middling one). The keyword stage needs less: its ``count`` best rows, the best score,
and the scores of the few rows the other stages chose. As in MaxScore (Turtle and Flood, 1995),
a row that holds none of the terms with the highest peaks scores at most the sum of the other
terms' peaks; once the ``count`` best rows holding one of those strong terms score more than
that, no other row can be among them, and only the strong terms' rows need a sum. The weaker
terms' scores are looked up for just those rows.

:func:`sparse_keyword` answers None when no such split exists (every term frequent, or too
few rows hold a strong term): the caller then sums per row. Each sum runs over the same terms
in the same order as the per-row one (a term a row lacks adds nothing there, 0.0 here), so
the scores are the same floats.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# One term's part of the query's BM25: (rows, scores), or (None, one score per row) for a
# frequent term, with the largest of its scores.
Part = tuple[np.ndarray | None, np.ndarray, float]

# Rows summed from which each term's postings find their place through a map over every row
# of the index, not by a search per row.
MAP_FROM = 16384


def held_part(rows: np.ndarray, scores: np.ndarray, size: int) -> Part:
    """A term's part as it is kept: its rows and scores, or for a frequent term (held by more
    than an eighth of the ``size`` rows) one score per row, 0 elsewhere, added without a
    scatter (adding 0.0 leaves a sum as it is, so the sums stay the same); with its peak."""
    peak = float(scores.max()) if scores.size else 0.0
    if 8 * rows.size > size:
        dense = np.zeros(size, dtype=np.float64)
        dense[rows] = scores
        return None, dense, peak
    return rows, scores, peak


@dataclass(slots=True)
class SparseKeyword:
    """Raw BM25 per row of one index, read like the per-row array it stands for."""

    parts: Sequence[Part]  # every term's, in term order
    rows: np.ndarray  # ascending: every row a strong term holds
    scores: np.ndarray  # their sums over every term
    size: int  # rows of the index
    best: np.ndarray  # the keyword candidates: the ``count`` best rows
    peak: float  # the best score of any row

    def __getitem__(self, at: np.ndarray) -> np.ndarray:
        at = np.asarray(at, dtype=np.int64)
        out = _sums(self.parts, at, strong=())
        if self.rows.size and at.size:
            pos = np.minimum(np.searchsorted(self.rows, at), self.rows.size - 1)
            held = self.rows[pos] == at
            out[held] = self.scores[pos[held]]
        return out

    def max(self) -> float:
        return self.peak


def sparse_keyword(
    parts: Sequence[Part],
    size: int,
    keys: np.ndarray,
    count: int,
    best_of: Callable[[np.ndarray, int, np.ndarray], np.ndarray],
) -> SparseKeyword | None:
    """The query's BM25 over ``size`` rows from each term's part (in term order), or None when
    no split into strong and weak terms shows which rows are the ``count`` best. ``best_of(values,
    count, keys)``: the positions of the best positive values, ties to the smaller key."""
    sparse = [i for i, (rows, _, _) in enumerate(parts) if rows is not None and rows.size]
    if not sparse:
        if any(rows is None for rows, _, _ in parts):
            return None
        empty = np.zeros(0, dtype=np.int64)
        return SparseKeyword(parts, empty, np.zeros(0), size, empty, 0.0)
    strong = _first_strong(parts, sparse, count)
    while True:
        marked = np.zeros(size, dtype=bool)  # a mark per row: much cheaper than np.unique here
        for i in strong:
            marked[parts[i][0]] = True
        union = np.flatnonzero(marked)
        sums = _sums(parts, union, strong, size)
        best = best_of(sums, count, keys[union])
        # The count-th best of these rows is a floor for the count-th best of all rows.
        floor = float(sums[best].min()) if best.size >= count else 0.0
        promote = _too_strong(parts, strong, floor)
        if not promote:
            return SparseKeyword(parts, union, sums, size, union[best], float(sums.max()))
        if any(parts[i][0] is None for i in promote):
            return None  # a frequent term's rows are every row: nothing to gain
        strong |= promote


def _first_strong(parts: Sequence[Part], sparse: list[int], count: int) -> set[int]:
    """The rarest terms, until they reach twice ``count`` rows (enough for a floor), and every
    term whose rows do not ascend (rows from several sources): only ascending rows can be
    looked up, so such a term is always summed."""
    strong, reach = set(), 0
    for i in sorted(sparse, key=lambda i: parts[i][0].size):
        if reach >= 2 * count and _ascending(parts[i][0]):
            continue
        strong.add(i)
        reach += parts[i][0].size
    return strong


def _too_strong(parts: Sequence[Part], strong: set[int], floor: float) -> set[int]:
    """The terms outside ``strong`` that cannot be left weak: the weakest are left out while
    their peaks together stay below ``floor`` (a row holding weak terms only scores at most
    that sum, widened by a rounding's worth: its own sum runs in another order)."""
    rest = sorted((i for i in range(len(parts)) if i not in strong), key=lambda i: parts[i][2])
    total = 0.0
    for at, i in enumerate(rest):
        if not (total + parts[i][2]) * (1 + 1e-9) < floor:
            return set(rest[at:])
        total += parts[i][2]
    return set()


def _sums(parts: Sequence[Part], at: np.ndarray, strong: set[int] | tuple, size: int = 0) -> np.ndarray:
    """Each of the rows ``at`` (ascending where ``strong`` is given: they hold every strong
    term's rows) summed over every term in term order; a term a row lacks adds nothing.
    ``size``: the index's rows, for a map from row to place when many rows are summed (a
    look-up per posting then costs less than a search per row)."""
    out = np.zeros(at.size, dtype=np.float64)
    place = None
    if size and at.size > MAP_FROM:
        place = np.full(size, -1, dtype=np.int32)
        place[at] = np.arange(at.size, dtype=np.int32)
    for i, (rows, scores, _) in enumerate(parts):
        if rows is None:
            out += scores[at]
        elif not rows.size or not at.size:
            continue
        elif place is not None:
            pos = place[rows]
            held = pos >= 0
            out[pos[held]] += scores[held]
        elif i in strong:
            out[np.searchsorted(at, rows)] += scores
        else:
            pos = np.minimum(np.searchsorted(rows, at), rows.size - 1)
            held = rows[pos] == at
            out[held] += scores[pos[held]]
    return out


def _ascending(rows: np.ndarray) -> bool:
    return rows.size < 2 or bool((rows[1:] > rows[:-1]).all())
