"""Scoring the memories of one or more project indexes for one query.

The pipeline, the same for a warm index and a cold one built for this search:

1. the rows each index may return (active, passing the filters);
2. vector candidates: the ``candidates`` rows nearest the query by Hamming distance of sign
   bits (a first pass on the leading 256 bits for large indexes), or by exact float32 cosine
   when ``exact`` is set;
3. keyword candidates: BM25 over every row searched (statistics over exactly those rows),
   the best ``candidates`` (a large index sums only the rows its strong terms reach, where
   that provably gives the same: :mod:`capsule.search.keywordsparse`);
4. for the union, the exact cosine (float32; a large index reads it only for the rows whose
   bounds from its int8 copy leave them a chance at the k best: :mod:`capsule.search.quantized`),
   the BM25 score divided by the best, time
   decay, the feedback bound and the outcome bonus, combined by the weights;
   plus a ``boost`` from the aids that fit the memories (the author the query names, how near
   it happened to a time the query names, read from the search's now by :mod:`capsule.search.dates`;
   for short turns of longer sessions, the neighbouring turns, the session's best score, the
   question a turn answers, its length, whether it only asks, and for a "when" query whether it
   says when);
5. the k best by score of the rows that match: a cosine or keyword score of at least
   ``min_relevance``, or having happened when the query says (time-named rows are candidates
   too, so a query may ask by time alone). Every cut (candidates, the k best) breaks ties by
   a key fixed per memory, so what is chosen never depends on where a row sits in an index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from ..core.clock import to_epoch
from ..core.records import ChangeSet, Filters, KeywordStats, MemoryRecord
from ..core.text import ends_with_question, says_when, tokens
from . import dates, hamming, ranking
from .index import ProjectIndex, Records, Shape, sign_codes, stable_key
from .keywordsparse import Part, SparseKeyword, held_part, sparse_keyword
from .query import asks_when, named_authors


@dataclass(slots=True)
class Scored:
    record: MemoryRecord
    score: float
    vector: float
    bm25: float
    time: float
    feedback: float
    outcome: float
    boost: float = 0.0
    when: float = 0.0  # the part of ``boost`` for having happened when the query says


@dataclass(frozen=True, slots=True)
class SearchOptions:
    candidates: int = 500  # rows per stage re-scored exactly
    exact: bool = False  # exact float32 first stage instead of binary codes
    prefix_words: int = 4  # 256 leading sign bits for the first pass over large indexes
    prefilter: int = 4  # the first pass keeps this many times ``candidates``
    library_from: int = 100_000  # rows from which the first pass is faiss's (capsule.search.hamming)
    # Ranking aids that adapt to the memories (see :class:`capsule.search.index.Shape`):
    window: str = "auto"  # keyword score over the neighbouring memories of a session: auto|on|off
    window_max_length: float = 40.0  # auto: only where the median memory is this short (tokens)
    window_min_session: float = 4.0  # auto: ... and the median session holds this many memories
    author_boost: float = 0.2  # added when the memory's author is named in the query
    date_boost: float = 0.1  # times how close the memory happened to a time the query names (capsule.search.dates)
    session_boost: float = 0.2  # times the best score in the memory's session (windowed data only)
    vector_window: bool = True  # with the keyword window, also average in the neighbours' cosine
    window_far: float = 0.5  # weight of the memories two away in the keyword window
    names_in_keywords: bool = False  # False: an author the query names is left to author_boost
    # Priors on how much a short turn can hold (windowed data only; measured on LoCoMo):
    answer_boost: float = 0.1  # times the score of the turn before, where that turn asked a question
    when_boost: float = 0.05  # a "when" query: added to a turn that itself says when (yesterday, last week)
    length_prior: float = 0.1  # times log(length / median length), clipped to [-1, 1]
    question_prior: float = 0.05  # subtracted from a turn that ends by asking a question
    k1: float = 1.2
    b: float = 0.75
    # BM25 length normalisation where the median memory is longer than ``window_max_length``
    # (an assistant's answers beside short user turns, documents): a long answer that repeats
    # the query's words then counts for less against the short turn that holds the fact.
    # Measured: LongMemEval dev R@5 0.752 -> 0.770; LoCoMo (short turns) keeps ``b``.
    long_b: float = 1.0
    # Where the median memory is long: times log(length / median), clipped to [-1, 1]. Negative:
    # beside long answers, the shorter memory more often holds the fact (LongMemEval dev R@5
    # 0.766 -> 0.829; -0.15 and -0.2 gave 0.836 and 0.834, the round value is kept). Chats of
    # short turns have their own, positive prior (``length_prior``).
    long_length_prior: float = -0.1
    # A hit needs its cosine or its keyword score (BM25 over the best) at least this, or to have
    # happened when the query says: recency, feedback and outcome alone do not make a match.
    # 0.15: the largest floor that left R@5 and R@10 of both benchmarks as they were (MiniLM;
    # 0.2 cost LongMemEval one relevant turn in its top 10, 0.3 cost both).
    min_relevance: float = 0.15
    # Rows from which an unfiltered keyword stage sums only the rows the query's rarer terms
    # reach, where that gives the same candidates (capsule.search.keywordsparse).
    sparse_from: int = 50_000


@dataclass(slots=True)
class _View:
    index: ProjectIndex
    mask: np.ndarray
    keyword: np.ndarray | SparseKeyword | None = None  # raw BM25 per row
    plain: bool = False  # the mask is every active row (no filter)


def wilson(positive: np.ndarray, total: np.ndarray, z: float = 1.96) -> np.ndarray:
    """Vectorised :func:`ranking.wilson_lower_bound` (0 where there are no votes)."""
    out = np.zeros(positive.shape, dtype=np.float64)
    voted = total > 0
    if voted.any():
        n, p = total[voted], positive[voted] / total[voted]
        centre = p + z * z / (2 * n)
        margin = z * np.sqrt((p * (1 - p) + z * z / (4 * n)) / n)
        out[voted] = np.maximum(0.0, (centre - margin) / (1 + z * z / n))
    return out


def _feedback(index: ProjectIndex) -> np.ndarray:
    """The Wilson bound of every row's votes, computed once per change of the index (it is
    elementwise: the same value as computed for the candidates alone)."""
    found = index.derived.get("feedback")
    if found is None or found.size != index.n:
        helpful = index.helpful[: index.n]
        found = index.derived["feedback"] = wilson(helpful, helpful + index.unhelpful[: index.n])
    return found


def _best_rows(
    values: np.ndarray, eligible: np.ndarray | None, count: int, keys: np.ndarray, *, smaller_is_better: bool
) -> np.ndarray:
    """The ``count`` eligible rows (None: every row) with the best values; ties at the cut go
    to the smaller key.

    Keys are fixed per memory (:func:`capsule.search.index.stable_key`), so the choice never depends
    on where a row sits: a warm index and a freshly loaded one pick the same rows.
    """
    rows = None if eligible is None else np.flatnonzero(eligible)
    picked = values if rows is None else values[rows]
    if picked.size <= count:
        return np.arange(picked.size) if rows is None else rows
    if picked.dtype.kind == "u" and smaller_is_better:
        # Small integers (Hamming distances): a histogram finds the cut without sorting.
        cut = int(np.searchsorted(np.cumsum(np.bincount(picked)), count))
        near = np.flatnonzero(picked <= cut)  # one pass over every row, then only the few
        better, tied = near[picked[near] < cut], near[picked[near] == cut]
    else:
        signed = picked if smaller_is_better else -picked.astype(np.float64)
        cut = np.partition(signed, count - 1)[count - 1]
        better, tied = np.flatnonzero(signed < cut), np.flatnonzero(signed == cut)
    if rows is not None:
        better, tied = rows[better], rows[tied]
    need = count - better.size
    if tied.size > need:
        tied = tied[np.argpartition(keys[tied], need - 1)[:need]]
    return np.concatenate((better, tied))


def _near_best(values: np.ndarray, count: int, *, smaller_is_better: bool, positive: bool = False) -> np.ndarray | None:
    """Rows (ascending) holding every row the best ``count`` of ``values`` can be, ties
    included, found without ranking them all; None when that does not pay or the guess fails.

    A threshold from a strided sample that about twice ``count`` values reach: when more than
    ``count`` do, the count-th best value reaches it too, so those rows hold every row a full
    ranking would pick (and every tie with the last of them). ``positive``: only values > 0.
    """
    if values.size <= 64 * count:  # a sample would cost about what it saves
        return None
    step = values.size // (8 * count)
    sample = values[::step]
    reach = min(sample.size, max(1, 2 * count // step))  # about 2 x count rows reach the threshold
    if smaller_is_better:
        threshold = np.partition(sample, reach - 1)[reach - 1]
        near = np.flatnonzero(values <= threshold)
    else:
        threshold = np.partition(sample, sample.size - reach)[sample.size - reach]
        if positive and not threshold > 0:
            return None
        near = np.flatnonzero(values >= threshold)
    # Exactly count: a full ranking orders them its own way. Most of them: no gain.
    return near if count < near.size <= values.size // 4 else None


def _top_positive(values: np.ndarray, count: int, keys: np.ndarray) -> np.ndarray:
    """``_best_rows(values, values > 0, count, keys, smaller_is_better=False)``: the same rows
    in the same order, without ranking every positive value of a large array."""
    near = _near_best(values, count, smaller_is_better=False, positive=True)
    if near is not None:
        return near[_best_rows(values[near], None, count, keys[near], smaller_is_better=False)]
    return _best_rows(values, values > 0, count, keys, smaller_is_better=False)


def _keyword(views: list[_View], terms: list[str], options: SearchOptions) -> None:
    """Raw BM25 of every searched row, with n, length and df over exactly those rows."""
    stats = getattr(views[0].index, "keyword_stats", None) if len(views) == 1 else None
    if stats is not None:
        _keyword_indexed(views[0], terms, options, stats)
        return
    single = len(views) == 1 and views[0].plain
    if single:
        n, total = views[0].index.alive_stats()
    else:
        n = sum(int(v.mask.sum()) for v in views)
        total = sum(float(v.index.length[: v.index.n][v.mask].sum()) for v in views)
    avg = total / n if n and total else 1.0
    if single and n:
        _keyword_cached(views[0], terms, options, n, avg)
        return
    for v in views:
        v.keyword = np.zeros(v.index.n, dtype=np.float64)
    if not n:
        return
    for term in terms:  # sorted, so sums run in one order in every process
        hits = []
        for v in views:
            rows, tfs = v.index.postings_of(term)
            keep = v.mask[rows]
            hits.append((v, rows[keep], tfs[keep].astype(np.float64)))
        df = sum(rows.size for _, rows, _ in hits)
        if df == 0:
            continue
        for v, rows, tf in hits:
            v.keyword[rows] += _term_scores(v.index, rows, tf, df, n, avg, options)


def _keyword_indexed(v: _View, terms: list[str], options: SearchOptions, stats: KeywordStats) -> None:
    """Raw BM25 of a hosted shortlist (capsule.store.atlas_search) with the statistics of the scope
    it was taken from, counted by the index: a term common in a keyword shortlist is not common in
    the project. A term the index gave no count for keeps the shortlist's (never below it)."""
    v.keyword = np.zeros(v.index.n, dtype=np.float64)
    avg = stats.avgdl
    if avg is None:
        shown = int(v.mask.sum())
        avg = float(v.index.length[: v.index.n][v.mask].sum()) / shown if shown else 1.0
    for term in terms:
        rows, tfs = v.index.postings_of(term)
        keep = v.mask[rows]
        rows = rows[keep]
        if not rows.size:
            continue
        df = max(stats.df.get(term, rows.size), rows.size)
        v.keyword[rows] += _term_scores(
            v.index, rows, tfs[keep].astype(np.float64), df, max(stats.n, df), avg or 1.0, options
        )


def _length_b(index: ProjectIndex, options: SearchOptions) -> float:
    """BM25's ``b`` for this index's memories: ``long_b`` where the median memory is long."""
    return options.long_b if index.shape().median_length > options.window_max_length else options.b


def _term_scores(
    index: ProjectIndex, rows: np.ndarray, tf: np.ndarray, df: int, n: int, avg: float, options: SearchOptions
) -> np.ndarray:
    return ranking.bm25_term(tf, index.length[rows], df, n, avg, k1=options.k1, b=_length_b(index, options))


def _keyword_cached(v: _View, terms: list[str], options: SearchOptions, n: int, avg: float) -> None:
    """:func:`_keyword` for one index searched without filters: each term's contribution is
    computed once per version of the index (the same arithmetic, so the same sums), and a
    large index sums only the rows its rarer terms reach where that can be shown to suffice
    (:mod:`capsule.search.keywordsparse`)."""
    index = v.index
    parts = [_term_part(v, term, options, n, avg) for term in terms]
    if index.n >= options.sparse_from and not _windowed(index.shape(), options):
        found = sparse_keyword(parts, index.n, index.key, options.candidates, _top_positive)
        if found is not None:
            v.keyword = found
            return
    v.keyword = np.zeros(index.n, dtype=np.float64)
    for rows, scores, _ in parts:
        if rows is None:
            v.keyword += scores
        elif rows.size:
            v.keyword[rows] += scores


def _term_part(v: _View, term: str, options: SearchOptions, n: int, avg: float) -> Part:
    """One term's contribution to an unfiltered search: its live rows and their scores, or for
    a frequent term (None, one score per row), with its best score; kept per index version."""
    index = v.index
    key = (term, options.k1, _length_b(index, options))
    found = index.scores.get(key)
    if found is not None:
        return found
    rows, tfs = index.postings_of(term)
    if n < index.n:  # some rows are dead (n: the active ones): their postings go
        keep = v.mask[rows]
        rows, tfs = rows[keep], tfs[keep]
    scores = _term_scores(index, rows, tfs.astype(np.float64), rows.size, n, avg, options) if rows.size else np.zeros(0)
    found = held_part(rows, scores, index.n)
    index.scores.fit(index.n)
    index.scores.put(key, *found)
    return found


def _hamming(codes: np.ndarray, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Hamming distances over the words of ``codes`` (words, rows) to the query's words."""
    block = codes if rows is None else codes[:, rows]
    return np.bitwise_count(block ^ query[:, None]).sum(axis=0, dtype=np.uint16)


def _every_row_has_a_vector(index: ProjectIndex) -> bool:
    """Whether every row of the index is active and has a vector (kept until the rows change;
    not while vectors are still being read: a row read without one loses it then)."""
    if index.deferred is not None:
        return False
    found = index.derived.get("every_vector")
    if found is None:
        n = index.n
        found = index.derived["every_vector"] = n > 0 and index.dead == 0 and bool(index.has_vec[:n].all())
    return found


def _vector_rows(view: _View, query: np.ndarray, options: SearchOptions) -> np.ndarray:
    """Rows worth an exact score: the nearest by sign bits (or exactly), ties at the cut kept."""
    index = view.index
    if view.plain and _every_row_has_a_vector(index):
        eligible, everyone = None, True  # no filter, no dead row: skip the gathers
    else:
        eligible = view.mask & index.has_vec[: index.n]
        if not eligible.any():
            return np.zeros(0, dtype=np.int64)
        everyone = bool(eligible.all())
        if everyone:
            eligible = None
    if options.exact:
        index.complete()
        sims = index.similarities(query)
        return _best_rows(sims, eligible, options.candidates, index.key, smaller_is_better=False)
    code = sign_codes(query[None, :], index.words)[0]
    wide = options.prefilter * options.candidates
    rows_in = index.n if everyone else int(eligible.sum())
    if rows_in >= options.library_from and index.words > options.prefix_words and hamming.available():
        # A large index: one pass of faiss over the leading bits, rows by row (capsule.search.hamming).
        prefix = index.prefix_codes(options.prefix_words)
        rows = hamming.nearest(prefix, code[: options.prefix_words], wide, eligible)
        distance = np.bitwise_count(index.row_codes[rows] ^ code).sum(axis=1, dtype=np.uint16)
        return rows[_best_rows(distance, None, options.candidates, index.key[rows], smaller_is_better=True)]
    codes = index.codes[:, : index.n]
    # Two passes pay when the words the first pass skips outweigh gathering the survivors'
    # codes (about four times the cost of reading them in place): not at 10k x 384-d.
    if index.words > options.prefix_words and rows_in * (index.words - options.prefix_words) > 4 * wide * index.words:
        # A first pass on the leading words only reads a quarter of the codes; the survivors
        # (many times the candidates wanted) are then ranked on every bit.
        prefix = _hamming(codes[: options.prefix_words], code[: options.prefix_words])
        rows = _best_rows(prefix, eligible, wide, index.key, smaller_is_better=True)
        distance = np.bitwise_count(index.row_codes[rows] ^ code).sum(axis=1, dtype=np.uint16)
        return rows[_best_rows(distance, None, options.candidates, index.key[rows], smaller_is_better=True)]
    return _best_rows(_hamming(codes, code), eligible, options.candidates, index.key, smaller_is_better=True)


def search_indexes(
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
) -> tuple[list[Scored], int]:
    """The k best rows of ``indexes`` for the query, and how many rows were searched."""
    views, searched = _views(indexes, filters)
    q = _query_vector(query_vector, weights)
    top_keyword = _keyword_stage(views, query, weights, options)
    spans = dates.windows(query, now) if options.date_boost else []
    scored: list[Scored] = []
    for v in views:
        scored.extend(_score_view(v, q, model_id, now, weights, options, top_keyword, k, query, spans))
    scored.sort(key=lambda s: (-s.score, stable_key(s.record.id)))
    return scored[:k], searched


def _views(indexes: Sequence[ProjectIndex], filters: Filters) -> tuple[list[_View], int]:
    """A view of each index (its rows passing the filters), and how many rows they hold."""
    plain = filters == Filters()
    views = [_View(index, index.mask(filters), plain=plain) for index in indexes]
    # Unfiltered, the rows searched are the active ones, counted once per change.
    return views, sum(v.index.alive_stats()[0] if plain else int(v.mask.sum()) for v in views)


def _query_vector(query_vector: np.ndarray | None, weights: ranking.Weights) -> np.ndarray | None:
    use_vector = query_vector is not None and weights.vector > 0
    return None if not use_vector else np.ascontiguousarray(query_vector, dtype=np.float32)


def _keyword_stage(views: list[_View], query: str, weights: ranking.Weights, options: SearchOptions) -> float:
    """Each view's BM25 (statistics over every view searched), widened where memories are
    short turns; answers the best keyword score of all (0 without keywords)."""
    if weights.bm25 > 0:
        _keyword(views, _keyword_terms(views, query, options), options)
        for v in views:
            _widen(v, options)
    return max((float(v.keyword.max()) for v in views if v.keyword is not None and v.keyword.size), default=0.0)


def _keyword_terms(views: list[_View], query: str, options: SearchOptions) -> list[str]:
    """The query's keyword terms, sorted (sums then run in one order in every process); an
    author the query names is left to the author boost, unless it would leave no term."""
    terms = set(tokens(query))
    if not options.names_in_keywords and options.author_boost:
        for v in views:
            for name in v.index.authors:
                if set(tokens(name)) & terms and len(v.index.authors) > 1:
                    terms -= set(tokens(name))
        terms = terms or set(tokens(query))
    return sorted(terms)


def _windowed(shape: Shape, options: SearchOptions) -> bool:
    if options.window == "auto":
        return (
            0 < shape.median_length <= options.window_max_length and shape.median_session >= options.window_min_session
        )
    return options.window == "on"


def _widen(v: _View, options: SearchOptions) -> None:
    """Where memories are short turns of longer sessions, a turn's keyword score also counts
    its neighbours' (the turn itself double): an answer often sits next to the words asked for."""
    shape = v.index.shape()
    if v.keyword is None or not _windowed(shape, options) or not v.keyword.any():
        return
    raw = v.keyword
    padded = np.append(raw, 0.0)  # index -1 (no neighbour) reads the trailing zero
    v.keyword = 2 * raw + padded[shape.prev] + padded[shape.next]
    if options.window_far:
        prev2 = np.append(shape.prev, -1)[shape.prev]
        next2 = np.append(shape.next, -1)[shape.next]
        v.keyword += options.window_far * (padded[prev2] + padded[next2])
    v.keyword[~v.mask] = 0.0


def _boosts(index: ProjectIndex, rows: np.ndarray, options: SearchOptions, query: str) -> np.ndarray:
    boost = np.zeros(rows.size, dtype=np.float64)
    if options.author_boost and index.authors:
        named = named_authors(query, index.authors)
        if named and len(named) < len(index.authors):  # naming everyone singles out no one
            boost += options.author_boost * np.isin(index.author[rows], named)
    return boost


def _when(index: ProjectIndex, rows: np.ndarray, options: SearchOptions, spans: list[dates.Window]) -> np.ndarray:
    """How near each memory happened to a time the query names, times ``date_boost``."""
    if not options.date_boost or not spans:
        return np.zeros(rows.size)
    return options.date_boost * dates.closeness(index.occurred[rows], spans)


def _priors(index: ProjectIndex, rows: np.ndarray, options: SearchOptions) -> np.ndarray:
    """In a chat of short turns, a longer turn holds more to remember and a turn that ends by
    asking holds less (its answer comes next). Where memories are long (an assistant's answers
    beside short user turns) it is the other way round: the long ones repeat a topic, the short
    ones state the facts (``long_length_prior``)."""
    prior = np.zeros(rows.size, dtype=np.float64)
    shape = index.shape()
    if options.long_length_prior and shape.median_length > options.window_max_length:
        prior += options.long_length_prior * ranking.length_prior(index.length[rows], shape.median_length)
    if not (options.length_prior or options.question_prior) or not _windowed(shape, options):
        return prior
    if options.length_prior:
        prior += options.length_prior * ranking.length_prior(index.length[rows], shape.median_length)
    if options.question_prior:
        prior -= options.question_prior * _asks(index, rows)
    return prior


def _when_boost(index: ProjectIndex, rows: np.ndarray, options: SearchOptions, query: str) -> np.ndarray:
    """For a query asking when, a lift for turns that say when: in a chat the time is told
    relative to the day ("last week"), in the turn that holds the answer. Short turns only:
    a long answer says some time word by its length alone."""
    if not options.when_boost or not _windowed(index.shape(), options) or not asks_when(query):
        return np.zeros(rows.size)
    return options.when_boost * _content_test(index, rows, says_when)


def _asks(index: ProjectIndex, rows: np.ndarray) -> np.ndarray:
    """Whether each row (-1: none) is a memory that ends by asking a question."""
    return _content_test(index, rows, ends_with_question)


def _content_test(index: ProjectIndex, rows: np.ndarray, test: Callable[[str], bool]) -> np.ndarray:
    """``test`` of each row's content (False for -1 or a purged row). Rows an index loaded as
    columns holds only as ids are fetched in one read, not one read per row."""
    index.records.prefetch(rows[rows >= 0])
    return np.fromiter(
        (row >= 0 and (r := index.records[row]) is not None and test(r.content) for row in rows.tolist()),
        dtype=bool,
        count=rows.size,
    )


def _answer_boost(index: ProjectIndex, rows: np.ndarray, score: np.ndarray, options: SearchOptions) -> np.ndarray:
    """A share of the score of the turn before, where that turn asked: in a dialogue the answer
    follows the question, and the question often holds the words the query asks with."""
    shape = index.shape()
    if not options.answer_boost or not _windowed(shape, options):
        return np.zeros(rows.size)
    full = np.zeros(index.n + 1)  # index -1 (no turn before) reads the trailing zero
    full[rows] = score
    before = shape.prev[rows]
    return options.answer_boost * _asks(index, before) * np.maximum(full[before], 0.0)


def _vector_window(index: ProjectIndex, rows: np.ndarray, vector: np.ndarray, q: np.ndarray) -> np.ndarray:
    shape = index.shape()
    out = 2 * vector
    for side in (shape.prev, shape.next):
        other = side[rows]
        sims = vector.copy()
        ok = (other >= 0) & index.has_vec[np.maximum(other, 0)]
        if ok.any():
            sims[ok] = np.clip(np.einsum("ij,j->i", index.vectors(other[ok]), q), 0.0, 1.0)
        out += sims
    return out / 4


def _session_boost(index: ProjectIndex, rows: np.ndarray, score: np.ndarray, options: SearchOptions) -> np.ndarray:
    """A share of the best score in each memory's session: a session that answers well lifts its turns."""
    boost = np.zeros(rows.size, dtype=np.float64)
    if not options.session_boost or not _windowed(index.shape(), options):
        return boost
    session = index.session[rows]
    grouped = session >= 0
    if not grouped.any():
        return boost
    ids, inverse = np.unique(session[grouped], return_inverse=True)
    best = np.full(ids.size, -np.inf)
    np.maximum.at(best, inverse, score[grouped])
    boost[grouped] = options.session_boost * best[inverse]
    return boost


def _timed_rows(v: _View, spans: list[dates.Window], options: SearchOptions) -> np.ndarray:
    """Candidates for the times the query names: a query may ask by time alone ("what worked
    last month?"), so the memories nearest those times are scored too; of many equally near,
    the most recent (a rise far below any score step, only to order the ties)."""
    index = v.index
    when = index.occurred[: index.n]
    near = dates.closeness(when, spans) * v.mask
    if not near.any():
        return np.zeros(0, dtype=np.int64)
    order = near + 1e-6 * ranking.scale_to_unit(when - when.min())
    return _top_positive(np.where(near > 0, order, 0.0), options.candidates, index.key)


def _score_view(
    v: _View,
    q: np.ndarray | None,
    model_id: str | None,
    now: datetime,
    weights: ranking.Weights,
    options: SearchOptions,
    top_keyword: float,
    k: int,
    query: str = "",
    spans: list[dates.Window] | None = None,
) -> list[Scored]:
    index = v.index
    parts = []
    vector_ok = _vector_ok(index, q, model_id)
    if vector_ok:
        parts.append(_vector_rows(v, q, options))
    if v.keyword is not None and top_keyword > 0:
        parts.append(
            v.keyword.best
            if isinstance(v.keyword, SparseKeyword)
            else _top_positive(v.keyword, options.candidates, index.key)
        )
    if spans and options.date_boost:
        parts.append(_timed_rows(v, spans, options))
    if not parts:
        return []
    chosen = np.zeros(index.n, dtype=bool)  # a mark per row: cheaper than sorting the union
    for part in parts:
        chosen[part] = True
    return _score_rows(
        v, np.flatnonzero(chosen), q if vector_ok else None, now, weights, options, top_keyword, k, query, spans
    )


def _vector_ok(index: ProjectIndex, q: np.ndarray | None, model_id: str | None) -> bool:
    """Whether the index's vectors are comparable with the query's (same model and size)."""
    return q is not None and index.model_id == model_id and index.dim == q.size


def _score_rows(
    v: _View,
    rows: np.ndarray,
    q: np.ndarray | None,
    now: datetime,
    weights: ranking.Weights,
    options: SearchOptions,
    top_keyword: float,
    k: int,
    query: str = "",
    spans: list[dates.Window] | None = None,
) -> list[Scored]:
    """The k best of the candidate ``rows`` (ascending) of one view, scored in full; ``q``
    None: no vector score (no query vector, or another model's index)."""
    return _rank_rows(v, rows, q, now, weights, options, top_keyword, k, query, spans).hits()


def _rank_rows(
    v: _View,
    rows: np.ndarray,
    q: np.ndarray | None,
    now: datetime,
    weights: ranking.Weights,
    options: SearchOptions,
    top_keyword: float,
    k: int,
    query: str = "",
    spans: list[dates.Window] | None = None,
) -> _Ranked:
    """:func:`_score_rows` without building the results (records are read only for hits)."""
    index = v.index
    windowed = _windowed(index.shape(), options)
    keyword = np.zeros(rows.size) if v.keyword is None or top_keyword <= 0 else v.keyword[rows] / top_keyword
    ages = (to_epoch(now) - index.occurred[rows]) / 86400.0
    time = ranking.time_decay(ages, weights.half_life_days)
    feedback = _feedback(index)[rows]
    outcome = index.outcome[rows]
    when = _when(index, rows, options, spans or [])
    boost = _boosts(index, rows, options, query) + when
    boost += _priors(index, rows, options)
    boost += _when_boost(index, rows, options, query)
    vector, exact = np.zeros(rows.size, dtype=np.float64), None
    if q is not None and not windowed and index.quant is not None and rows.size > 4 * k:
        # Without the chat aids no part of the score but the cosine depends on the cosine.
        vector, exact = _vector_where_it_counts(
            index,
            rows,
            q,
            lambda cosine: ranking.combine(weights, cosine, keyword, time, feedback, outcome) + boost,
            keyword,
            when,
            options,
            k,
        )
    elif q is not None:
        vector = _vector(index, rows, q)
        if options.vector_window and windowed:
            vector = _vector_window(index, rows, vector, q)
    score = ranking.combine(weights, vector, keyword, time, feedback, outcome)
    boost += _answer_boost(index, rows, score + boost, options)
    boost += _session_boost(index, rows, score + boost, options)
    score = score + boost
    matched = np.flatnonzero(_matched(vector, keyword, when, options))
    if exact is not None:
        matched = matched[exact[matched]]
    # Only the k best (and every tie with the k-th) can be returned: build just those.
    keep = matched[_best_rows(score[matched], None, k, index.key[rows[matched]], smaller_is_better=False)]
    return _Ranked(index, rows, keep, score, vector, keyword, time, feedback, outcome, boost, when)


def _vector(index: ProjectIndex, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The cosine of each row with the query, clipped to [0, 1] (0 without a vector)."""
    vector = np.zeros(rows.size, dtype=np.float64)
    with_vec = index.has_vec[rows]
    if rows.size and with_vec.all():
        # einsum, not BLAS: each row's dot is summed in one fixed order wherever it sits.
        vector = np.clip(index.dots(rows, q), 0.0, 1.0).astype(np.float64)
    elif with_vec.any():
        vector[with_vec] = np.clip(index.dots(rows[with_vec], q), 0.0, 1.0)
    return vector


def _matched(vector: np.ndarray, keyword: np.ndarray, when: np.ndarray, options: SearchOptions) -> np.ndarray:
    """Which rows match: a cosine or keyword score of at least ``min_relevance``, or a time named."""
    relevance = np.maximum(vector, keyword)
    return ((relevance > 0) & (relevance >= options.min_relevance)) | (when > 0)


def _vector_where_it_counts(
    index: ProjectIndex,
    rows: np.ndarray,
    q: np.ndarray,
    score_of: Callable[[np.ndarray], np.ndarray],
    keyword: np.ndarray,
    when: np.ndarray,
    options: SearchOptions,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_vector` for the rows that can be among the k best, and which rows those are;
    a lower bound of the cosine for the others (:mod:`capsule.search.quantized`).

    ``score_of(cosines)``: the rows' scores for those cosines, non-decreasing in each. Each
    row's cosine lies within bounds from its int8 copy (a row the copy does not hold yet:
    within [0, 1]). The k best of the rows that surely match score at least the k-th best of
    their lowest scores; a row whose highest score stays below that, or that cannot match,
    is beaten by k others, so only the rest need their exact cosine."""
    has = index.has_vec[rows]
    low, high = np.zeros(rows.size), has.astype(np.float64)
    held = has & (rows < index.quant.n)
    if held.any():
        below, above = index.quant.bounds(rows[held], q)
        low[held], high[held] = np.clip(below, 0.0, 1.0), np.clip(above, 0.0, 1.0)
    return where_it_counts(
        low, high, has, lambda exact: np.clip(index.dots(rows[exact], q), 0.0, 1.0), score_of, keyword, when, options, k
    )


def where_it_counts(
    low: np.ndarray,
    high: np.ndarray,
    has: np.ndarray,
    exact_of: Callable[[np.ndarray], np.ndarray],
    score_of: Callable[[np.ndarray], np.ndarray],
    keyword: np.ndarray,
    when: np.ndarray,
    options: SearchOptions,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Of rows whose cosines lie within ``[low, high]`` (``has``: those with a vector), which
    can be among the k best (and match), and the cosines to score them by: the exact one
    (``exact_of(mask)``, clipped) of those with a vector, the lower bound of the others. The
    k best of the rows that surely match score at least the k-th best of their lowest scores,
    so a row whose highest score stays below that is beaten by k others."""
    sure = np.flatnonzero(_matched(low, keyword, when, options))
    floor = -np.inf
    if sure.size >= k:
        lowest = score_of(low)[sure]
        floor = np.partition(lowest, sure.size - k)[sure.size - k]
    need = _matched(high, keyword, when, options) & (score_of(high) >= floor)
    vector = low
    exact = need & has
    if exact.any():
        vector[exact] = exact_of(exact)
    return vector, need


@dataclass(slots=True)
class _Ranked:
    """One view's scored candidates: ``keep`` (positions in ``rows``) are its k best."""

    index: ProjectIndex
    rows: np.ndarray
    keep: np.ndarray
    score: np.ndarray
    vector: np.ndarray
    keyword: np.ndarray
    time: np.ndarray
    feedback: np.ndarray
    outcome: np.ndarray
    boost: np.ndarray
    when: np.ndarray

    def record_rows(self, keep: np.ndarray) -> list[tuple[Records, np.ndarray]]:
        """Whose records :meth:`hits` reads for ``keep``: each index's records and rows."""
        return [(self.index.records, self.rows[keep])]

    def hits(self, keep: np.ndarray | None = None) -> list[Scored]:
        """The results for ``keep`` (default: the k best), their records read in one go."""
        keep = self.keep if keep is None else keep
        index, rows = self.index, self.rows
        index.records.prefetch(rows[keep])  # one read for the hits of an index loaded as columns
        return [
            Scored(
                record=index.records[rows[i]],
                score=float(self.score[i]),
                vector=float(self.vector[i]),
                bm25=float(self.keyword[i]),
                time=float(self.time[i]),
                feedback=float(self.feedback[i]),
                outcome=float(self.outcome[i]),
                boost=float(self.boost[i]),
                when=float(self.when[i]),
            )
            for i in keep
        ]


def rank(
    records: Sequence[MemoryRecord],
    *,
    query: str,
    query_vector: np.ndarray | None,
    model_id: str | None,
    now: datetime,
    weights: ranking.Weights,
    k: int,
    options: SearchOptions = SearchOptions(),
) -> list[Scored]:
    """The k best of ``records`` (a cold index built for this one search)."""
    index = ProjectIndex("", "", model_id)
    index.apply(ChangeSet(version=0, changed=[replace(r) for r in records], reset=True))
    hits, _ = search_indexes(
        [index],
        filters=Filters(),
        query=query,
        query_vector=query_vector,
        model_id=model_id,
        now=now,
        weights=weights,
        k=k,
        options=options,
    )
    return hits


def describe(hits: Sequence[Scored], weights: ranking.Weights) -> str:
    """One sentence on why the top result ranked first: the signal that gave it the most score."""
    if not hits:
        return "nothing matched by meaning, keyword or the time the query names"
    top = hits[0]
    parts = {
        f"by meaning (cosine {top.vector:.2f})": weights.vector * top.vector,
        f"by keyword (BM25 {top.bm25:.2f} of the best)": weights.bm25 * top.bm25,
        "by having happened when the query says": top.when,
        "by its place among the memories (an author named, its neighbouring turns, its session, its length)": top.boost
        - top.when,
        f"by recency ({top.time:.2f})": weights.time * top.time,
        "by helpful feedback": weights.feedback * top.feedback,
        "by a recorded success": top.outcome,
    }
    why, share = max(parts.items(), key=lambda item: item[1])
    text = f"the top result ranked first {why}: {share:.2f} of its score {top.score:.2f}"
    lifts = [
        name
        for name, value in parts.items()
        if value > 0 and name != why and not name.startswith(("by meaning", "by keyword", "by recency", "by its place"))
    ]
    if lifts:
        text += ", raised " + " and ".join(lifts)
    if top.outcome < 0:
        text += ", lowered by a recorded failure"
    return text
