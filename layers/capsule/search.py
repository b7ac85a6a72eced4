"""Scoring candidate memories for one query: plain data in, ranked hits out.

Kept apart from the service so the candidate source (a store scan today, a warm index
later) can change without touching the math, and so tests can rank a fixed corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

import numpy as np

from . import ranking
from .records import MemoryRecord
from .text import tokens


@dataclass(slots=True)
class Scored:
    record: MemoryRecord
    score: float
    vector: float
    bm25: float
    time: float
    feedback: float
    outcome: float


def rank(
    records: Sequence[MemoryRecord],
    *,
    query: str,
    query_vector: np.ndarray | None,
    model_id: str | None,
    now: datetime,
    weights: ranking.Weights,
    k: int,
) -> list[Scored]:
    """The k best of ``records`` for the query, each with every ranking component."""
    n = len(records)
    if n == 0:
        return []
    vector = np.zeros(n, dtype=np.float64)
    if query_vector is not None and weights.vector > 0:
        usable = [i for i, r in enumerate(records) if r.embedding is not None and r.model == model_id]
        if usable:
            matrix = np.stack([records[i].embedding for i in usable])
            vector[usable] = ranking.cosine(matrix, query_vector.astype(np.float32))
    keyword = np.zeros(n, dtype=np.float64)
    if weights.bm25 > 0:
        keyword = ranking.scale_to_unit(ranking.bm25(tokens(query), [tokens(r.content) for r in records]))
    ages = np.fromiter(((now - r.occurred_at).total_seconds() / 86400 for r in records), np.float64, n)
    time = ranking.time_decay(ages, weights.half_life_days)
    feedback = np.fromiter(
        (ranking.wilson_lower_bound(r.helpful, r.helpful + r.unhelpful) for r in records), np.float64, n
    )
    outcome = np.fromiter((ranking.outcome_bonus(r.meta.get("outcome_status")) for r in records), np.float64, n)
    score = ranking.combine(weights, vector, keyword, time, feedback, outcome)
    matched = (vector > 0) | (keyword > 0)
    score = np.where(matched, score, -np.inf)
    best = [i for i in ranking.top_k(score, k) if matched[i]]
    return [
        Scored(
            record=records[i], score=float(score[i]), vector=float(vector[i]), bm25=float(keyword[i]),
            time=float(time[i]), feedback=float(feedback[i]), outcome=float(outcome[i]),
        )
        for i in best
    ]


def describe(hits: Sequence[Scored], weights: ranking.Weights) -> str:
    """One sentence on why the top result ranked first."""
    if not hits:
        return "nothing matched by meaning or keyword"
    top = hits[0]
    by_meaning, by_keyword = weights.vector * top.vector, weights.bm25 * top.bm25
    if by_keyword > by_meaning:
        why = "matched by keyword more than by meaning"
    elif by_keyword > 0:
        why = "matched by meaning and by keyword"
    else:
        why = "matched by meaning"
    extras = []
    if top.feedback > 0:
        extras.append("raised by helpful feedback")
    if top.outcome > 0:
        extras.append("raised by a recorded success")
    elif top.outcome < 0:
        extras.append("lowered by a recorded failure")
    return f"the top result {why}" + (f", {', '.join(extras)}" if extras else "")
