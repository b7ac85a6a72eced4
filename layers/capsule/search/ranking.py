"""The hybrid ranking: pure functions over plain numbers and arrays.

score = w_vec*vector + w_bm25*bm25 + w_time*time + w_fb*feedback + outcome

* vector: cosine similarity of unit vectors, clipped at 0;
* bm25: Okapi BM25 over the memories searched, divided by the best score (0..1);
* time: exp(-ln2 * age_days / half_life), age from when the memory happened;
* feedback: the Wilson lower bound of the helpful ratio (one vote cannot outrank fifty);
* outcome: +0.10 for a recorded success, -0.05 for a failure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

OUTCOME_BONUS = {"success": 0.10, "failure": -0.05}


@dataclass(frozen=True, slots=True)
class Weights:
    vector: float = 0.60
    bm25: float = 0.30
    time: float = 0.10
    feedback: float = 0.15
    half_life_days: float = 30.0

    def replace(self, **changes: float | None) -> Weights:
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        values.update({k: v for k, v in changes.items() if v is not None})
        return Weights(**values)


def time_decay(age_days: np.ndarray | float, half_life_days: float = 30.0) -> np.ndarray:
    age = np.maximum(np.asarray(age_days, dtype=np.float64), 0.0)
    return np.exp(-math.log(2) * age / half_life_days)


def wilson_lower_bound(positive: int, total: int, z: float = 1.96) -> float:
    """Lower bound of the 95% Wilson score interval for positive/total (0 with no votes)."""
    if total <= 0:
        return 0.0
    phat = positive / total
    denom = 1 + z * z / total
    centre = phat + z * z / (2 * total)
    margin = z * math.sqrt((phat * (1 - phat) + z * z / (4 * total)) / total)
    return max(0.0, (centre - margin) / denom)


def outcome_bonus(status: str | None) -> float:
    return OUTCOME_BONUS.get(status or "unknown", 0.0)


def bm25(query: Sequence[str], documents: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """Okapi BM25 of each document for the query tokens (raw, unnormalised)."""
    n = len(documents)
    scores = np.zeros(n, dtype=np.float64)
    terms = set(query)
    if n == 0 or not terms:
        return scores
    lengths = np.fromiter((len(d) for d in documents), dtype=np.float64, count=n)
    avg = float(lengths.mean()) or 1.0
    counts = [Counter(d) for d in documents]
    for term in terms:
        tf = np.fromiter((c.get(term, 0) for c in counts), dtype=np.float64, count=n)
        df = int(np.count_nonzero(tf))
        if df == 0:
            continue
        scores += bm25_term(tf, lengths, df, n, avg, k1=k1, b=b)
    return scores


def bm25_term(
    tf: np.ndarray, lengths: np.ndarray, df: int, n: int, avg: float, *, k1: float, b: float | np.ndarray
) -> np.ndarray:
    """One term's Okapi BM25 in each document: ``tf`` its counts there, ``lengths`` theirs,
    ``df`` of ``n`` documents hold it; ``b`` one value, or one per document. Every search path
    sums these very floats, so their sums agree to the last bit.

    ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / avg))``, each operation on the
    same operands in the same order, in three arrays instead of eight: a frequent term of a
    large index holds hundreds of thousands of rows, and each fresh array of that size is
    memory the OS must map again."""
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    norm = b * lengths
    norm /= avg
    norm = np.add(1 - b, norm, out=norm if np.ndim(b) == 0 else None)
    norm *= k1
    below = tf + norm
    out = idf * tf
    out *= k1 + 1
    out /= below
    return out


def length_prior(lengths: np.ndarray, median: float) -> np.ndarray:
    """log(length / median), clipped to [-1, 1]: 0 for a memory of the median length, up to 1
    for one e times longer, down to -1 for one e times shorter (lengths below 1 count as 1)."""
    ratio = np.maximum(np.asarray(lengths, dtype=np.float64), 1.0) / max(float(median), 1.0)
    return np.clip(np.log(ratio), -1.0, 1.0)


def scale_to_unit(values: np.ndarray) -> np.ndarray:
    """Divide by the maximum, so the best match is 1 and no match stays 0."""
    top = float(values.max()) if values.size else 0.0
    return values / top if top > 0 else np.zeros_like(values)


def cosine(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine of unit row vectors with a unit query, clipped to [0, 1]."""
    if matrix.size == 0:
        return np.zeros(0, dtype=np.float32)
    return np.clip(matrix @ query, 0.0, 1.0)


def combine(
    weights: Weights,
    vector: np.ndarray,
    keyword: np.ndarray,
    time: np.ndarray,
    feedback: np.ndarray,
    outcome: np.ndarray,
) -> np.ndarray:
    return (
        weights.vector * vector + weights.bm25 * keyword + weights.time * time + weights.feedback * feedback + outcome
    )


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first (a partial sort)."""
    if scores.size <= k:
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]
