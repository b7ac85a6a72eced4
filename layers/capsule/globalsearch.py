"""Searching many project indexes at once (``"global": true``): candidates chosen in one pass
over the tenant's rows, not per project.

:func:`capsule.search.search_indexes` picks each project's own candidates (``candidates``
rows per stage and project), so a search over 100 projects re-scores 100 times as many rows
as one over a single project of the same total size. Here every stage picks its candidates
across all the indexes together:

- vector: the Hamming first pass runs over the leading sign-bit words of every row of every
  index, concatenated (:class:`TenantCodes`, kept until an index changes), then the
  survivors are ranked on every bit and the best ``candidates`` kept (or, with ``exact``,
  the best by exact float32 cosine over all rows);
- keyword: BM25 with statistics over every row searched (as before), and the best
  ``candidates`` positive scores of all indexes;
- time: the rows nearest the times the query names, of all indexes.

Only the rows chosen are then scored, per index (each index's own shape, authors and
sessions), by the same code as a single project (:func:`capsule.search._score_rows`): exact
float32 cosine and every signal, so the final scores are the ones a project search gives.
The cost grows with the candidates, not with the number of projects. Ties at every cut go
to the smaller key fixed per memory, as in one project.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

import numpy as np

from . import dates, hamming, ranking
from .index import ProjectIndex, sign_codes, stable_key
from .records import Filters
from .search import (Scored, SearchOptions, _Ranked, _View, _best_rows, _keyword_stage, _query_vector, _rank_rows,
                     _vector_ok, _views)


@dataclass(slots=True)
class _Concat:
    """The leading sign-bit words and keys of every row of some indexes, one after another."""

    stamp: tuple
    starts: np.ndarray  # first row of each index in the concatenation (len = indexes + 1)
    prefix: np.ndarray  # (rows, words) uint64, C-contiguous
    keys: np.ndarray  # (rows,) int64: each row's tie-break key


class TenantCodes:
    """The concatenated first-pass codes of the indexes a global search reads, rebuilt only
    when one of them changed (another version or row count) or the set of indexes did."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[tuple, _Concat] = {}

    def of(self, indexes: Sequence[ProjectIndex], words: int) -> _Concat:
        stamp = tuple((id(i), i.version, i.n, i.words) for i in indexes)
        scope = (tuple(id(i) for i in indexes), words)
        with self._lock:
            kept = self._kept.get(scope)
        if kept is not None and kept.stamp == stamp:
            return kept
        sizes = [i.n for i in indexes]
        starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        prefix = np.zeros((int(starts[-1]), words), dtype=np.uint64)
        for index, start in zip(indexes, starts[:-1].tolist()):
            if index.n and index.words >= words:
                prefix[start:start + index.n] = index.prefix_codes(words)
        keys = np.concatenate([i.key[: i.n] for i in indexes]) if indexes else np.zeros(0, np.int64)
        made = _Concat(stamp, starts, prefix, keys)
        with self._lock:
            self._kept = {scope: made}  # one scope kept: a tenant's global search repeats it
        return made


def search_global(
    indexes: Sequence[ProjectIndex],
    *,
    filters: Filters,
    query: str,
    query_vector: np.ndarray | None,
    model_id: str | None,
    now: datetime,
    weights: ranking.Weights,
    k: int,
    options: SearchOptions = SearchOptions(),
    codes: TenantCodes | None = None,
) -> tuple[list[Scored], int]:
    """The k best rows of ``indexes`` for the query, and how many rows were searched: what
    :func:`capsule.search.search_indexes` answers, with candidates chosen across indexes."""
    views, searched = _views(indexes, filters)
    q = _query_vector(query_vector, weights)
    top_keyword = _keyword_stage(views, query, weights, options)
    spans = dates.windows(query, now) if options.date_boost else []
    capable = [_vector_ok(v.index, q, model_id) for v in views]
    chosen = candidate_rows(views, capable, q, options, top_keyword, spans, codes or TenantCodes())
    ranked = [_rank_rows(v, rows, q if ok else None, now, weights, options, top_keyword, k, query, spans)
              for v, rows, ok in zip(views, chosen, capable) if rows.size]
    scored: list[Scored] = []
    for one, keep in zip(ranked, _best_of_all(ranked, k)):
        if keep.size:  # records are read only for the rows returned
            scored.extend(one.hits(keep))
    scored.sort(key=lambda s: (-s.score, stable_key(s.record.id)))
    return scored[:k], searched


def _best_of_all(ranked: list[_Ranked], k: int) -> list[np.ndarray]:
    """Of every view's k best, the k best of all (ties to the smaller key, the memory's own:
    the order the results are sorted in), as positions for each view's :meth:`_Ranked.hits`."""
    if not ranked:
        return []
    score = np.concatenate([r.score[r.keep] for r in ranked])
    keys = np.concatenate([r.index.key[r.rows[r.keep]] for r in ranked])
    starts = np.concatenate(([0], np.cumsum([r.keep.size for r in ranked]))).astype(np.int64)
    best = np.sort(_best_rows(score, None, k, keys, smaller_is_better=False))
    return [r.keep[part] for r, part in zip(ranked, _split(best, starts, len(ranked)))]


def candidate_rows(views: list[_View], capable: list[bool], q: np.ndarray | None, options: SearchOptions,
                   top_keyword: float, spans: list[dates.Window], codes: TenantCodes) -> list[np.ndarray]:
    """The rows of each view a global search scores (ascending): the union of the stages'."""
    chosen = [np.zeros(0, dtype=np.int64) for _ in views]
    if q is not None and any(capable):
        _mark(chosen, _vector_candidates(views, capable, q, options, codes))
    if top_keyword > 0:
        _mark(chosen, _keyword_candidates(views, options))
    if spans:
        _mark(chosen, _timed_candidates(views, spans, options))
    return chosen


def _mark(chosen: list[np.ndarray], picked: list[np.ndarray]) -> None:
    """Add each view's newly picked rows to its chosen ones (ascending, no repeats)."""
    for i, rows in enumerate(picked):
        if rows.size:
            chosen[i] = np.union1d(chosen[i], rows)


def _split(rows: np.ndarray, starts: np.ndarray, count: int) -> list[np.ndarray]:
    """Tenant-wide row numbers as each view's own rows."""
    owner = np.searchsorted(starts, rows, side="right") - 1
    order = np.argsort(owner, kind="stable")
    rows, owner = rows[order], owner[order]
    bounds = np.searchsorted(owner, np.arange(count + 1))
    return [rows[bounds[i]:bounds[i + 1]] - starts[i] for i in range(count)]


def _eligible(views: list[_View], capable: list[bool]) -> np.ndarray | None:
    """Rows a vector may be scored for, tenant-wide; None: every row."""
    parts = [(v.mask & v.index.has_vec[: v.index.n]) if ok else np.zeros(v.index.n, dtype=bool)
             for v, ok in zip(views, capable)]
    eligible = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
    return None if eligible.all() else eligible


def _vector_candidates(views: list[_View], capable: list[bool], q: np.ndarray, options: SearchOptions,
                       codes: TenantCodes) -> list[np.ndarray]:
    """The ``candidates`` rows of all views nearest the query: by sign bits (a first pass over
    the leading words of every row, then every bit of the survivors), or exactly."""
    indexes = [v.index for v in views]
    eligible = _eligible(views, capable)
    if eligible is not None and not eligible.any():
        return [np.zeros(0, dtype=np.int64) for _ in views]
    if options.exact:
        return _exact_candidates(views, capable, q, options, eligible)
    words = max(v.index.words for v, ok in zip(views, capable) if ok)
    first = min(words, options.prefix_words)
    concat = codes.of(indexes, first)
    code = sign_codes(q[None, :], words)[0]
    wide = options.prefilter * options.candidates if first < words else options.candidates
    rows = None
    if concat.prefix.shape[0] >= options.library_from and hamming.available():
        rows = hamming.nearest(concat.prefix, code[:first], wide, eligible)
    if rows is None:
        distance = np.bitwise_count(concat.prefix ^ code[:first]).sum(axis=1, dtype=np.uint16)
        rows = _best_rows(distance, eligible, wide, concat.keys, smaller_is_better=True)
    if first == words:
        return _split(np.sort(rows), concat.starts, len(views))
    # The survivors ranked on every bit: their codes gathered from each index.
    local = _split(np.sort(rows), concat.starts, len(views))
    distance = np.concatenate([np.bitwise_count(v.index.row_codes[r] ^ code).sum(axis=1, dtype=np.uint16)
                               for v, r in zip(views, local)])
    rows = np.concatenate([r + concat.starts[i] for i, r in enumerate(local)])
    best = rows[_best_rows(distance, None, options.candidates, concat.keys[rows], smaller_is_better=True)]
    return _split(best, concat.starts, len(views))


def _exact_candidates(views: list[_View], capable: list[bool], q: np.ndarray, options: SearchOptions,
                      eligible: np.ndarray | None) -> list[np.ndarray]:
    sims, keys = [], []
    for v, ok in zip(views, capable):
        if ok:
            v.index.complete()
            sims.append(v.index.similarities(q)[: v.index.n])
        else:
            sims.append(np.zeros(v.index.n, dtype=np.float32))
        keys.append(v.index.key[: v.index.n])
    starts = np.concatenate(([0], np.cumsum([v.index.n for v in views]))).astype(np.int64)
    rows = _best_rows(np.concatenate(sims), eligible, options.candidates, np.concatenate(keys),
                      smaller_is_better=False)
    return _split(rows, starts, len(views))


def _positive_best(values: list[np.ndarray], views: list[_View], count: int) -> list[np.ndarray]:
    """Of the positive values of all views (one array per view), the ``count`` best; ties at
    the cut to the smaller key."""
    rows = [np.flatnonzero(v > 0) for v in values]
    found = [r.size for r in rows]
    if not sum(found):
        return [np.zeros(0, dtype=np.int64) for _ in views]
    starts = np.concatenate(([0], np.cumsum(found))).astype(np.int64)
    picked = np.concatenate([v[r] for v, r in zip(values, rows)])
    keys = np.concatenate([view.index.key[r] for view, r in zip(views, rows)])
    best = _best_rows(picked, None, count, keys, smaller_is_better=False)
    return [rows[i][part] for i, part in enumerate(_split(np.sort(best), starts, len(views)))]


def _keyword_candidates(views: list[_View], options: SearchOptions) -> list[np.ndarray]:
    values = [v.keyword if v.keyword is not None else np.zeros(v.index.n) for v in views]
    return _positive_best(values, views, options.candidates)


def _timed_candidates(views: list[_View], spans: list[dates.Window], options: SearchOptions) -> list[np.ndarray]:
    """The rows nearest the times the query names, of all views; of many equally near, the
    most recent (a rise far below any score step, over the times of every view)."""
    when = [v.index.occurred[: v.index.n] for v in views]
    near = [dates.closeness(w, spans) * v.mask for w, v in zip(when, views)]
    if not any(n.any() for n in near):
        return [np.zeros(0, dtype=np.int64) for _ in views]
    present = [w for w in when if w.size]
    low, high = min(float(w.min()) for w in present), max(float(w.max()) for w in present)
    span = high - low
    order = [np.where(n > 0, n + 1e-6 * ((w - low) / span if span > 0 else 0.0), 0.0) for n, w in zip(near, when)]
    return _positive_best(order, views, options.candidates)
