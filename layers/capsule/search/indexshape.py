"""The shape of a project's memories (lengths, sessions, neighbours in a session), which decides
which ranking aids fit it (capsule.search.hybrid).

Pure functions of an index's row arrays, computed once per version by
:meth:`capsule.search.index.ProjectIndex.shape`; kept apart because they are statistics over the rows,
not part of keeping or reading them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


class Rows(Protocol):
    """The row arrays a shape reads (an :class:`~capsule.search.indexrows.IndexRows` has them)."""

    n: int
    alive: np.ndarray
    key: np.ndarray
    session: np.ndarray
    length: np.ndarray
    occurred: np.ndarray


@dataclass(slots=True)
class Shape:
    """The shape of a project's memories, which decides which ranking aids fit it.

    ``prev``/``next``: the row before and after each row in its session (by when it happened),
    -1 at a session's ends or for rows without a session. ``median_length``: keyword tokens per
    memory. ``median_session``: memories per session, over rows that have a session.
    """

    prev: np.ndarray
    next: np.ndarray
    median_length: float
    median_session: float

    @classmethod
    def of(cls, index: Rows) -> Shape:
        n = index.n
        prev = np.full(n, -1, dtype=np.int64)
        nxt = np.full(n, -1, dtype=np.int64)
        alive = np.flatnonzero(index.alive[:n])
        lengths = index.length[alive]
        median_length = _median(lengths) if alive.size else 0.0
        grouped = alive[index.session[alive] >= 0]
        if grouped.size == 0:
            return cls(prev, nxt, median_length, 0.0)
        order = grouped[np.lexsort((index.key[grouped], index.occurred[grouped], index.session[grouped]))]
        same = index.session[order[1:]] == index.session[order[:-1]]
        prev[order[1:][same]] = order[:-1][same]
        nxt[order[:-1][same]] = order[1:][same]
        sizes = np.unique(index.session[grouped], return_counts=True)[1]
        return cls(prev, nxt, median_length, _median(sizes))


def _median(values: np.ndarray) -> float:
    """``np.median`` of a non-empty array, the same value without the ``numpy.ma`` import it
    costs a fresh process on its first call."""
    half = values.size // 2
    if values.size % 2:
        return float(np.partition(values, half)[half])
    part = np.partition(values, (half - 1, half))
    return float((part[half - 1] + part[half]) / 2)
