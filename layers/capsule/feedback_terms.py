"""Query expansion by pseudo relevance feedback (RM3-style), for the keyword score.

The best few keyword matches are read as if they were relevant: the words they share, weighed
by how much of each matching memory they make up, how well that memory matched and how rare the
word is, are added to the query at a fraction of the original words' weight. Classic, and
nothing in it is tied to one corpus. Pure: the caller passes the memories' tokens and the
document frequencies.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable, Sequence


def expansion_terms(feedback: Sequence[tuple[Sequence[str], float]], query_terms: set[str],
                    df: Callable[[str], int], n: int, count: int) -> list[str]:
    """The ``count`` best new terms of the ``feedback`` memories ((tokens, score) pairs, best
    first): sum over memories of (tf / length) x (score / best score) x idf, over ``n`` memories."""
    if not feedback or count <= 0 or n <= 0:
        return []
    best = max(score for _, score in feedback) or 1.0
    weight: Counter[str] = Counter()
    for words, score in feedback:
        if not words:
            continue
        for term, tf in Counter(words).items():
            if term in query_terms or term.isdigit():
                continue
            d = df(term)
            if d < 2:  # a word only this memory has says nothing about the others
                continue
            weight[term] += tf / len(words) * (score / best) * math.log(1 + (n - d + 0.5) / (d + 0.5))
    return [t for t, _ in sorted(weight.items(), key=lambda item: (-item[1], item[0]))[:count]]
