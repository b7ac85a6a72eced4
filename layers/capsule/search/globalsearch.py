"""Searching many project indexes at once (``"global": true``): candidates chosen in one pass
over the tenant's rows, not per project.

:func:`capsule.search.hybrid.search_indexes` picks each project's own candidates (``candidates``
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
sessions), by the same code as a single project (:func:`capsule.search.hybrid._score_rows`): exact
float32 cosine and every signal, so the final scores are the ones a project search gives.
The cost grows with the candidates, not with the number of projects. Ties at every cut go
to the smaller key fixed per memory, as in one project.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.clock import to_epoch
from ..core.records import Filters
from . import dates, hamming, quantized, ranking
from .hybrid import (
    Scored,
    SearchOptions,
    _best_rows,
    _every_row_has_a_vector,
    _keyword_terms,
    _length_b,
    _matched,
    _query_vector,
    _rank_rows,
    _Ranked,
    _top_positive,
    _vector_ok,
    _View,
    _views,
    _widen,
    _windowed,
    where_it_counts,
    wilson,
)
from .index import ProjectIndex, sign_codes, stable_key
from .indexrecords import Records, prefetch_together
from .keywordsparse import Part, SparseKeyword, held_part, sparse_keyword
from .matrix import read_rows, row_dots, take_parts
from .postings import TermScores
from .query import named_authors
from .tenantpostings import PostingsTable, Resorter, TenantPostings

if TYPE_CHECKING:
    from .tenanttables import TenantTables


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

    def __init__(
        self,
        submit: Callable[[Callable[[], None]], object] | None = None,
        tables: Callable[[], TenantTables | None] | None = None,
    ) -> None:
        """``submit``: runs work beside the searches (the service's background thread), where a
        tenant's postings are sorted again once many of its indexes changed, and a table is
        written to ``tables``; None: on the search's path. ``tables``: where a tenant's table
        is kept on disk, for the next process (None: nowhere)."""
        self._lock = threading.Lock()
        self._kept: dict[tuple, _Concat] = {}
        self._columns: _Columns | None = None
        self._submit = submit
        self._resorter = Resorter(submit) if submit is not None else None
        self._tables = tables
        # The table last read from or written to disk, and whose it is (tenant, model).
        self._on_disk: PostingsTable | None = None
        self._disk_owner: tuple | None = None

    def columns(self, indexes: Sequence[ProjectIndex]) -> _Columns:
        """The indexes' :class:`_Columns`, kept until one of them changes (or a table of their
        postings sorted beside the searches is ready)."""
        stamp = _stamp(indexes)
        fresh = self._resorter.take() if self._resorter is not None else None
        with self._lock:
            kept = self._columns
        if kept is not None and kept.stamp == stamp and fresh is None:
            return kept
        previous = fresh or (kept.postings.table if kept is not None else None)
        if previous is None or not _holds_any(previous, indexes):
            previous = self._from_disk(indexes) or previous  # none yet, or another tenant's
        made = _Columns.of(indexes, stamp, previous, self._resorter)
        self._save(indexes, made.postings.table)
        with self._lock:
            self._columns = made
        return made

    def _from_disk(self, indexes: Sequence[ProjectIndex]) -> PostingsTable | None:
        """The tenant's table kept on disk (read once, until another tenant's is asked for),
        where it holds some of ``indexes``: one that holds none is no better than no table (a
        large tenant's is then sorted beside the searches, not on their path)."""
        if self._tables is None or not indexes:
            return None
        owner = (indexes[0].tenant, indexes[0].model_id)
        if self._disk_owner != owner:
            tables = self._tables()
            self._on_disk = tables.load(*owner) if tables is not None else None
            self._disk_owner = owner
        table = self._on_disk
        return table if table is not None and _holds_any(table, indexes) else None

    def _save(self, indexes: Sequence[ProjectIndex], table: PostingsTable) -> None:
        """Write a new table of snapshots' postings to disk, beside the searches."""
        if self._submit is None or table is self._on_disk or not table.named_by_files():
            return
        tables = self._tables() if self._tables is not None else None
        if tables is not None:
            self._on_disk, self._disk_owner = table, (indexes[0].tenant, indexes[0].model_id)
            self._submit(partial(tables.save, *self._disk_owner, table))

    def of(self, indexes: Sequence[ProjectIndex], words: int) -> _Concat:
        stamp = _stamp(indexes)
        scope = (tuple(i.serial for i in indexes), words)
        with self._lock:
            kept = self._kept.get(scope)
        if kept is not None and kept.stamp == stamp:
            return kept
        sizes = [i.n for i in indexes]
        starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        prefix = np.zeros((int(starts[-1]), words), dtype=np.uint64)
        for index, start in zip(indexes, starts[:-1].tolist()):
            if index.n and index.words >= words:
                prefix[start : start + index.n] = index.prefix_codes(words)
        keys = np.concatenate([i.key[: i.n] for i in indexes]) if indexes else np.zeros(0, np.int64)
        made = _Concat(stamp, starts, prefix, keys)
        with self._lock:
            self._kept = {scope: made}  # one scope kept: a tenant's global search repeats it
        return made


@dataclass(slots=True)
class _Columns:
    """What ranking reads of every row of some indexes, one index after another, and their
    keyword postings (:mod:`capsule.search.tenantpostings`; rows numbered tenant-wide)."""

    stamp: tuple
    starts: np.ndarray  # first row of each index (len = indexes + 1)
    key: np.ndarray
    length: np.ndarray
    occurred: np.ndarray
    helpful: np.ndarray
    unhelpful: np.ndarray
    outcome: np.ndarray
    has_vec: np.ndarray
    postings: TenantPostings
    # A small tenant's sign codes and vectors, joined on first use (see :meth:`joined`).
    _joined: dict = field(default_factory=dict)
    # Each query term's scores over the tenant's rows for an unfiltered search, kept with the
    # columns (until an index changes): frequent terms recur, and each is a pass over its rows.
    scores: TermScores = field(default_factory=TermScores)

    def joined(self, indexes: Sequence[ProjectIndex], name: str, width: int) -> np.ndarray | None:
        """Every row's ``row_codes`` or ``matrix`` (``name``), one index after another, where
        the tenant is small (at most :data:`JOIN_MAX` bytes) and every index's rows have
        ``width`` columns and are all read; None otherwise (each index is read on its own).

        Many small projects: a global search gathers a few rows of each, and the hundred
        gathers (their Python, not their bytes) cost more than the search's own arithmetic.
        Joined, the same values are gathered at once, so the same sums come out."""
        if (name, width) not in self._joined:
            if name == "matrix" and any(i.deferred is not None and not i.filled[: i.n].all() for i in indexes if i.n):
                # A vector still in the store, read on demand by ProjectIndex.vectors. Not kept:
                # reading them beside the searches (settle) changes no stamp, so ask again next time.
                return None
            self._joined[(name, width)] = _join(indexes, name, width, int(self.starts[-1]))
        return self._joined[(name, width)]

    @classmethod
    def of(
        cls,
        indexes: Sequence[ProjectIndex],
        stamp: tuple,
        postings: PostingsTable | None = None,
        resorter: Resorter | None = None,
    ) -> _Columns:
        """``postings``: the table an earlier search sorted, kept where few indexes changed since."""
        starts = np.concatenate(([0], np.cumsum([i.n for i in indexes]))).astype(np.int64)
        joined: dict[str, Any] = {
            name: np.concatenate([getattr(i, name)[: i.n] for i in indexes])
            for name in ("key", "length", "occurred", "helpful", "unhelpful", "outcome", "has_vec")
        }
        return cls(stamp, starts, postings=TenantPostings.of(indexes, starts, postings, resorter), **joined)


JOIN_MAX = 32 << 20  # bytes of codes or vectors a tenant's joined copy may hold (see _Columns.joined)


def _join(indexes: Sequence[ProjectIndex], name: str, width: int, rows: int) -> np.ndarray | None:
    held = [i for i in indexes if i.n]
    arrays = [getattr(i, name) for i in held]
    if not arrays or any(a.ndim != 2 or a.shape[1] != width for a in arrays):
        return None
    if rows * width * np.dtype(arrays[0].dtype).itemsize > JOIN_MAX:
        return None
    # A slice where the rows are an array (copied once, by the concatenation), else read.
    return np.concatenate(
        [a[: i.n] if isinstance(a, np.ndarray) else read_rows(a, np.arange(i.n)) for i, a in zip(held, arrays)]
    )


def _holds_any(table: PostingsTable, indexes: Sequence[ProjectIndex]) -> bool:
    """Whether the table holds the postings of any of the indexes as they are now."""
    return any(i.postings_mark() in table.places for i in indexes)


def _stamp(indexes: Sequence[ProjectIndex]) -> tuple:
    return tuple((i.serial, i.changes, i.version, i.n, i.words) for i in indexes)


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
    options: SearchOptions = SearchOptions(),  # noqa: B008 - frozen
    codes: TenantCodes | None = None,
) -> tuple[list[Scored], int]:
    """The k best rows of ``indexes`` for the query, and how many rows were searched: what
    :func:`capsule.search.hybrid.search_indexes` answers, with candidates chosen across indexes."""
    codes = codes or TenantCodes()
    views, searched = _views(indexes, filters)
    columns = codes.columns(indexes)
    q = _query_vector(query_vector, weights)
    top_keyword = _tenant_keyword(views, columns, query, weights, options)
    spans = dates.windows(query, now) if options.date_boost else []
    capable = [_vector_ok(v.index, q, model_id) for v in views]
    chosen = candidate_rows(views, capable, q, options, top_keyword, spans, codes)
    plain = [_plain_scoring(v.index, options, query) for v in views]
    ranked = [
        _rank_rows(v, rows, q if ok else None, now, weights, options, top_keyword, k, query, spans)
        for v, rows, ok, simple in zip(views, chosen, capable, plain)
        if rows.size and not simple
    ]
    together = _rank_plain(views, chosen, capable, plain, columns, q, now, weights, options, top_keyword, k, spans)
    if together is not None:
        ranked.append(together)
    returned = [(one, keep) for one, keep in zip(ranked, _best_of_all(ranked, k)) if keep.size]
    # Records are read only for the rows returned, in one store read for every index.
    prefetch_together([part for one, keep in returned for part in one.record_rows(keep)])
    scored: list[Scored] = []
    for one, keep in returned:
        scored.extend(one.hits(keep))
    scored.sort(key=lambda s: (-s.score, stable_key(s.record.id)))
    return scored[:k], searched


def _plain_scoring(index: ProjectIndex, options: SearchOptions, query: str) -> bool:
    """Whether no ranking aid of the index's own applies (no session window, no length prior,
    no author named): its rows are then scored by the signals alone, with every such index's
    rows together (:func:`_rank_plain`)."""
    shape = index.shape()
    if _windowed(shape, options):
        return False
    if options.long_length_prior and shape.median_length > options.window_max_length:
        return False
    if options.author_boost and index.authors:
        named = named_authors(query, index.authors)
        if named and len(named) < len(index.authors):
            return False
    return True


def _tenant_keyword(
    views: list[_View], columns: _Columns, query: str, weights: ranking.Weights, options: SearchOptions
) -> float:
    """:func:`capsule.search.hybrid._keyword_stage` for many views, each term looked up once in the
    tenant's postings: the same statistics (n, average length and df over every row
    searched), the same arithmetic and the same order of sums, so the same scores."""
    if weights.bm25 <= 0:
        return 0.0
    terms = _keyword_terms(views, query, options)
    if all(v.plain for v in views):
        stats = [v.index.alive_stats() for v in views]
        n, total = sum(s[0] for s in stats), sum(s[1] for s in stats)
    else:
        n = sum(int(v.mask.sum()) for v in views)
        total = sum(float(v.index.length[: v.index.n][v.mask].sum()) for v in views)
    avg = total / n if n and total else 1.0
    keyword = np.zeros(int(columns.starts[-1]), dtype=np.float64)
    starts = columns.starts
    for v, start, stop in zip(views, starts[:-1].tolist(), starts[1:].tolist()):
        v.keyword = keyword[start:stop]  # each view's part of the tenant's scores
    if n:
        # No filter and no dead row: nothing to mask per term (asked per view: an unfiltered one's mask is kept).
        everyone = all(bool(v.mask.all()) for v in views)
        mask = None if everyone else np.concatenate([v.mask for v in views])
        b_of = np.array([_length_b(v.index, options) for v in views], dtype=np.float64)
        # One b for every view (the usual case): the same value in the same formula, without
        # finding each posting's view (a search over the views' starts per posting).
        single_b = float(b_of[0]) if b_of.size and bool((b_of == b_of[0]).all()) else None
        variants = next((v.index.term_variants for v in views if v.index.term_variants is not None), None)
        indexes = [v.index for v in views]
        parts = []
        for term in terms:  # sorted, so sums run in one order in every process
            key = (term, options.k1, single_b if single_b is not None else b_of.tobytes())
            found = columns.scores.get(key) if everyone else None
            if found is None:
                found = _term_part(columns, indexes, term, variants, mask, single_b, b_of, n, avg, options)
                if everyone:
                    columns.scores.fit(keyword.size)
                    columns.scores.put(key, *found)
            parts.append(found)
        if (
            everyone
            and keyword.size >= options.sparse_from
            and not any(_windowed(v.index.shape(), options) for v in views)
        ):
            found = sparse_keyword(parts, keyword.size, columns.key, options.candidates, _top_positive)
            if found is not None:
                for v, start in zip(views, starts[:-1].tolist()):
                    v.keyword = _TenantSlice(found, start)
                return found.max()
        for rows, scores, _ in parts:
            if rows is None:
                keyword += scores
            elif rows.size:
                keyword[rows] += scores
    for v in views:
        _widen(v, options)
    return max((float(v.keyword.max()) for v in views if v.keyword.size), default=0.0)


def _term_part(
    columns: _Columns,
    indexes: Sequence[ProjectIndex],
    term: str,
    variants,
    mask: np.ndarray | None,
    single_b: float | None,
    b_of: np.ndarray,
    n: int,
    avg: float,
    options: SearchOptions,
) -> Part:
    """One term's scores over the tenant's rows (``mask``: only those rows; None: every row),
    rows ascending, with the best score; a frequent term's as one score per row."""
    rows, tf = columns.postings.rows_of(indexes, term, variants)
    if mask is not None:
        keep = mask[rows]
        rows, tf = rows[keep], tf[keep]
    if rows.size > 1 and not bool((rows[1:] > rows[:-1]).all()):
        order = np.argsort(rows, kind="stable")  # ascending, for look-ups (capsule.search.keywordsparse)
        rows, tf = rows[order], tf[order]
    tf = tf.astype(np.float64)
    b = single_b if single_b is not None else b_of[np.searchsorted(columns.starts, rows, side="right") - 1]
    scores = ranking.bm25_term(tf, columns.length[rows], rows.size, n, avg, k1=options.k1, b=b)
    if mask is None:  # kept for other searches: as capsule.search.keywordsparse keeps a term
        return held_part(rows, scores, len(columns.key))
    return rows, scores, float(scores.max()) if scores.size else 0.0


class _TenantSlice:
    """One view's part of the tenant's keyword scores summed sparsely, read like its own array."""

    __slots__ = ("scores", "start")

    def __init__(self, scores: SparseKeyword, start: int) -> None:
        self.scores, self.start = scores, start

    def __getitem__(self, rows: np.ndarray) -> np.ndarray:
        return self.scores[np.asarray(rows, dtype=np.int64) + self.start]


def _rank_plain(
    views: list[_View],
    chosen: list[np.ndarray],
    capable: list[bool],
    plain: list[bool],
    columns: _Columns,
    q: np.ndarray | None,
    now: datetime,
    weights: ranking.Weights,
    options: SearchOptions,
    top_keyword: float,
    k: int,
    spans: list[dates.Window],
) -> _Tenant | None:
    """The candidates of every plain-scored view (:func:`_plain_scoring`), scored together:
    what :func:`capsule.search.hybrid._rank_rows` computes for them (their boosts are all 0 but the
    time the query names), tenant-wide."""
    parts = [(i, rows) for i, (rows, simple) in enumerate(zip(chosen, plain)) if simple and rows.size]
    if not parts:
        return None
    owner = np.repeat(np.array([i for i, _ in parts], dtype=np.int64), [rows.size for _, rows in parts])
    local = np.concatenate([rows for _, rows in parts])
    rows = local + columns.starts[owner]
    if top_keyword <= 0:
        keyword = np.zeros(rows.size)
    elif isinstance(views[parts[0][0]].keyword, _TenantSlice):  # every view's: read at once
        keyword = views[parts[0][0]].keyword.scores[rows] / top_keyword
    else:
        keyword = np.concatenate([views[i].keyword[part] for i, part in parts]) / top_keyword
    ages = (to_epoch(now) - columns.occurred[rows]) / 86400.0
    time = ranking.time_decay(ages, weights.half_life_days)
    helpful = columns.helpful[rows]
    feedback = wilson(helpful, helpful + columns.unhelpful[rows])
    outcome = columns.outcome[rows]
    when = (
        options.date_boost * dates.closeness(columns.occurred[rows], spans)
        if options.date_boost and spans
        else np.zeros(rows.size)
    )
    boost = np.zeros(rows.size, dtype=np.float64) + when
    vector, exact = np.zeros(rows.size, dtype=np.float64), None
    if q is not None:
        with_vec = columns.has_vec[rows] & np.asarray(capable, dtype=bool)[owner]
        bounds = _plain_bounds(views, columns, rows, with_vec, q) if rows.size > 4 * k else None
        if bounds is None:
            vector[with_vec] = _plain_dots(views, columns, rows, with_vec, q)
        else:  # as capsule.search.hybrid._vector_where_it_counts, over the tenant's candidates
            vector, exact = where_it_counts(
                *bounds,
                with_vec,
                lambda exact: _plain_dots(views, columns, rows, exact, q),
                lambda cosine: ranking.combine(weights, cosine, keyword, time, feedback, outcome) + boost,
                keyword,
                when,
                options,
                k,
            )
    score = ranking.combine(weights, vector, keyword, time, feedback, outcome) + boost
    matched = np.flatnonzero(_matched(vector, keyword, when, options))
    if exact is not None:
        matched = matched[exact[matched]]
    keep = matched[_best_rows(score[matched], None, k, columns.key[rows[matched]], smaller_is_better=False)]
    return _Tenant(
        None,
        rows,
        keep,
        score,
        vector,
        keyword,
        time,
        feedback,
        outcome,
        boost,
        when,
        views=views,
        owner=owner,
        local=local,
    )


def _plain_bounds(
    views: list[_View], columns: _Columns, rows: np.ndarray, with_vec: np.ndarray, q: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Bounds of each candidate's cosine from its index's int8 copy (:mod:`capsule.search.quantized`):
    [0, 1] for a row with a vector no copy holds (an index without one, or a row added since),
    [0, 0] for one without a vector; None where no copy holds any candidate."""
    starts = columns.starts
    held = np.zeros(rows.size, dtype=bool)
    codes, meta = [], []
    for i, a, b in _spans(rows, starts):
        quant = views[i].index.quant
        if quant is None or quant.codes.shape[1] != q.size:
            continue
        mine = rows[a:b] - starts[i]
        # Ascending: the copy holds a prefix of them (all, unless rows were added since it).
        count = mine.size if int(mine[-1]) < quant.n else int(np.searchsorted(mine, quant.n))
        if count:
            held[a : a + count] = True
            codes.append((quant.codes, mine[:count]))
            meta.append((quant.meta, mine[:count]))
    if not codes:
        return None
    below, above = quantized.bounds_of(take_parts(codes, q.size, np.int8), take_parts(meta, 3, np.float32), q)
    low, high = np.zeros(rows.size), with_vec.astype(np.float64)
    low[held], high[held] = np.clip(below, 0.0, 1.0), np.clip(above, 0.0, 1.0)
    low[~with_vec] = high[~with_vec] = 0.0
    return low, high


def _plain_dots(
    views: list[_View], columns: _Columns, rows: np.ndarray, with_vec: np.ndarray, q: np.ndarray
) -> np.ndarray:
    """The exact float32 cosine, clipped to [0, 1], of ``rows[with_vec]``: from the tenant's
    joined vectors, or each index's read at once. einsum, not BLAS: each row's dot is summed
    in one fixed order wherever it sits, so both give the sums a project search gives."""
    joined = columns.joined([v.index for v in views], "matrix", q.size)
    if joined is not None:
        return np.clip(row_dots(joined, rows[with_vec], q), 0.0, 1.0)
    blocks = []  # rows ascend (views in order, each one's ascending): each view's rows at once
    for i, local in _local_parts(rows[with_vec], columns.starts):
        index = views[i].index
        # An index still reading its vectors from the store reads them first (ProjectIndex.vectors).
        blocks.append((index.matrix, local) if index.deferred is None else (index.vectors(local), None))
    if not blocks:
        return np.zeros(0)
    return np.clip(np.einsum("ij,j->i", take_parts(blocks, q.size, np.float32), q), 0.0, 1.0)


class _Tenant(_Ranked):
    """:class:`capsule.search.hybrid._Ranked` over rows of several indexes (``owner``, ``local``)."""

    __slots__ = ("views", "owner", "local")

    def __init__(self, *fields, views, owner, local) -> None:
        super().__init__(*fields)
        self.views, self.owner, self.local = views, owner, local

    def keys(self, keep: np.ndarray) -> np.ndarray:
        return np.array(
            [self.views[o].index.key[r] for o, r in zip(self.owner[keep].tolist(), self.local[keep].tolist())],
            dtype=np.int64,
        )

    def record_rows(self, keep: np.ndarray) -> list[tuple[Records, np.ndarray]]:
        return [
            (self.views[o].index.records, self.local[keep[self.owner[keep] == o]])
            for o in np.unique(self.owner[keep]).tolist()
        ]

    def hits(self, keep: np.ndarray | None = None) -> list[Scored]:
        keep = self.keep if keep is None else keep
        out: list[Scored] = []
        for o in np.unique(self.owner[keep]).tolist():
            mine = keep[self.owner[keep] == o]
            index = self.views[o].index  # its hits' records read already (search_global: prefetch_together)
            out.extend(
                Scored(
                    record=index.records[int(self.local[i])],
                    score=float(self.score[i]),
                    vector=float(self.vector[i]),
                    bm25=float(self.keyword[i]),
                    time=float(self.time[i]),
                    feedback=float(self.feedback[i]),
                    outcome=float(self.outcome[i]),
                    boost=float(self.boost[i]),
                    when=float(self.when[i]),
                )
                for i in mine
            )
        return out


def _best_of_all(ranked: list[_Ranked], k: int) -> list[np.ndarray]:
    """Of every view's k best, the k best of all (ties to the smaller key, the memory's own:
    the order the results are sorted in), as positions for each view's :meth:`_Ranked.hits`."""
    if not ranked:
        return []
    score = np.concatenate([r.score[r.keep] for r in ranked])
    keys = np.concatenate([r.keys(r.keep) if isinstance(r, _Tenant) else r.index.key[r.rows[r.keep]] for r in ranked])
    starts = np.concatenate(([0], np.cumsum([r.keep.size for r in ranked]))).astype(np.int64)
    best = np.sort(_best_rows(score, None, k, keys, smaller_is_better=False))
    return [r.keep[part] for r, part in zip(ranked, _split(best, starts, len(ranked)))]


def candidate_rows(
    views: list[_View],
    capable: list[bool],
    q: np.ndarray | None,
    options: SearchOptions,
    top_keyword: float,
    spans: list[dates.Window],
    codes: TenantCodes,
) -> list[np.ndarray]:
    """The rows of each view a global search scores (ascending): the union of the stages'."""
    columns = codes.columns([v.index for v in views])
    parts = []  # tenant-wide row numbers
    if q is not None and any(capable):
        parts.append(_vector_candidates(views, capable, q, options, codes, columns))
    if top_keyword > 0:
        parts.append(_keyword_candidates(views, columns, options))
    if spans:
        parts.append(_timed_candidates(views, columns, spans, options))
    rows = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    return _split(rows, columns.starts, len(views))


def _split(rows: np.ndarray, starts: np.ndarray, count: int) -> list[np.ndarray]:
    """Tenant-wide row numbers as each view's own rows."""
    owner = np.searchsorted(starts, rows, side="right") - 1
    order = np.argsort(owner, kind="stable")
    rows, owner = rows[order], owner[order]
    bounds = np.searchsorted(owner, np.arange(count + 1))
    return [rows[bounds[i] : bounds[i + 1]] - starts[i] for i in range(count)]


def _eligible(views: list[_View], capable: list[bool]) -> np.ndarray | None:
    """Rows a vector may be scored for, tenant-wide; None: every row."""
    if all(ok and v.plain and _every_row_has_a_vector(v.index) for v, ok in zip(views, capable)):
        return None  # known per index until its rows change: no pass over every row's mask
    parts = [
        (v.mask & v.index.has_vec[: v.index.n]) if ok else np.zeros(v.index.n, dtype=bool)
        for v, ok in zip(views, capable)
    ]
    eligible = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
    return None if eligible.all() else eligible


def _vector_candidates(
    views: list[_View],
    capable: list[bool],
    q: np.ndarray,
    options: SearchOptions,
    codes: TenantCodes,
    columns: _Columns,
) -> np.ndarray:
    """The ``candidates`` rows (tenant-wide) of all views nearest the query: by sign bits (a first pass over
    the leading words of every row, then every bit of the survivors), or exactly."""
    indexes = [v.index for v in views]
    eligible = _eligible(views, capable)
    if eligible is not None and not eligible.any():
        return np.zeros(0, dtype=np.int64)
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
        return rows
    # The survivors ranked on every bit: their codes gathered at once, or from each index.
    full = columns.joined(indexes, "row_codes", words)
    if full is not None:
        distance = np.bitwise_count(full[rows] ^ code).sum(axis=1, dtype=np.uint16)
        return rows[_best_rows(distance, None, options.candidates, concat.keys[rows], smaller_is_better=True)]
    rows = np.sort(rows)
    # A view with no survivors may have no codes at all (no vectors yet: zero words), so it is skipped.
    parts = [(views[i].index.row_codes, local) for i, local in _local_parts(rows, concat.starts)]
    distance = np.bitwise_count(take_parts(parts, words, np.uint64) ^ code).sum(axis=1, dtype=np.uint16)
    return rows[_best_rows(distance, None, options.candidates, concat.keys[rows], smaller_is_better=True)]


def _spans(rows: np.ndarray, starts: np.ndarray) -> list[tuple[int, int, int]]:
    """Of ascending tenant-wide rows, (view, first, stop) positions for each view holding any, in order."""
    bounds = np.searchsorted(rows, starts).tolist()
    return [(i, a, b) for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])) if a < b]


def _local_parts(rows: np.ndarray, starts: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Ascending tenant-wide rows as (view, its own rows) for each view holding any, in order."""
    return [(i, rows[a:b] - starts[i]) for i, a, b in _spans(rows, starts)]


def _exact_candidates(
    views: list[_View], capable: list[bool], q: np.ndarray, options: SearchOptions, eligible: np.ndarray | None
) -> np.ndarray:
    sims, keys = [], []
    for v, ok in zip(views, capable):
        if ok:
            v.index.complete()
            sims.append(v.index.similarities(q)[: v.index.n])
        else:
            sims.append(np.zeros(v.index.n, dtype=np.float32))
        keys.append(v.index.key[: v.index.n])
    return _best_rows(np.concatenate(sims), eligible, options.candidates, np.concatenate(keys), smaller_is_better=False)


def _positive_best(values: np.ndarray, keys: np.ndarray, count: int) -> np.ndarray:
    """Of the positive ``values`` (tenant-wide), the rows of the ``count`` best; ties at the
    cut to the smaller key."""
    rows = np.flatnonzero(values > 0)
    return rows[_best_rows(values[rows], None, count, keys[rows], smaller_is_better=False)]


def _keyword_candidates(views: list[_View], columns: _Columns, options: SearchOptions) -> np.ndarray:
    if views and isinstance(views[0].keyword, _TenantSlice):
        return views[0].keyword.scores.best  # chosen with the sums (capsule.search.keywordsparse)
    values = _tenant_scores(views, options)
    if values is None:
        values = np.concatenate([v.keyword if v.keyword is not None else np.zeros(v.index.n) for v in views])
    # The best positive values without ranking every positive one (the same rows: see
    # capsule.search.hybrid._top_positive): at a million rows, most hold a frequent word.
    return _top_positive(values, options.candidates, columns.key)


def _tenant_scores(views: list[_View], options: SearchOptions) -> np.ndarray | None:
    """The tenant's keyword scores as the one array :func:`_tenant_keyword` made, whose
    slices every view holds unless it was widened (only a chat of short turns is); else None."""
    if not views or views[0].keyword is None or any(_windowed(v.index.shape(), options) for v in views):
        return None
    return views[0].keyword.base


def _timed_candidates(
    views: list[_View], columns: _Columns, spans: list[dates.Window], options: SearchOptions
) -> np.ndarray:
    """The rows nearest the times the query names, of all views; of many equally near, the
    most recent (a rise far below any score step, over the times of every view)."""
    when = columns.occurred
    mask = np.concatenate([v.mask for v in views])
    near = dates.closeness(when, spans) * mask
    if not near.any():
        return np.zeros(0, dtype=np.int64)
    order = near + 1e-6 * ranking.scale_to_unit(when - when.min())
    return _positive_best(np.where(near > 0, order, 0.0), columns.key, options.candidates)
