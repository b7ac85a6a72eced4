"""Matching an error against known patterns: pure functions over terms and vectors.

A pattern matches an error by meaning (the cosine between the error and the pattern's vector
reaches the model's threshold, :func:`capsule.learning.matching.meaning_threshold`) or by
terms (at least half of the pattern's terms are in the error, and either two of them or an
error code). A pattern term is in the error when it is one of the error's signature terms or
one of its words, stemmed (``connection`` is in "could not connect"), so a tag's words count.

A pattern made by ``pattern_link`` has no occurrences to learn from: :func:`linked_profile`
gives it the words of its tag, the error codes of its solutions' signatures, and the mean of
those signatures' vectors, so it is found by meaning and terms like a mined one; its
description quotes those signatures.

When the error and the pattern's description name different error codes, meaning alone
does not match (as for solutions, :mod:`capsule.learning.matching`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..core.text import STOP_WORDS, tokens
from .signature import NOISE, codes

WEIGHTS = {"vector": 0.6, "terms": 0.4}
TERM_SHARE = 0.5
MAX_PROFILE_TERMS = 12


@dataclass(frozen=True, slots=True)
class ErrorWords:
    """The error's terms, words (plain and stemmed) and codes, computed once per request."""

    terms: frozenset[str]
    words: frozenset[str]
    codes: frozenset[str]

    @classmethod
    def of(cls, text: str, found_terms: Iterable[str]) -> ErrorWords:
        words = frozenset(tokens(text)) | frozenset(tokens(text, stem=False))
        return cls(frozenset(found_terms), words, frozenset(codes(text)))


def _present(term: str, error: ErrorWords) -> bool:
    if term in error.terms or term in error.words:
        return True
    stemmed = tokens(term)
    return bool(stemmed) and stemmed[0] in error.words


def term_hits(pattern_terms: Sequence[str], error: ErrorWords) -> list[str]:
    """The pattern's terms found in the error, sorted."""
    return sorted({t for t in pattern_terms if _present(t, error)})


@lru_cache(maxsize=4096)
def _named(description: str) -> frozenset[str]:
    return frozenset(codes(description))


def conflicts(description: str, error: ErrorWords) -> bool:
    """The pattern's description (an occurrence, or its solutions' signatures) and the error
    both name an error code and share none: alike in wording, different errors."""
    named = _named(description)
    return bool(named and error.codes and not named & error.codes)


def score(
    similarity: float,
    hits: Sequence[str],
    pattern_terms: Sequence[str],
    error: ErrorWords,
    threshold: float,
    *,
    conflict: bool = False,
) -> tuple[float, float] | None:
    """(score, share of terms found) when the pattern matches the error, else None. When the
    codes conflict, meaning alone does not match."""
    share = len(hits) / len(pattern_terms) if pattern_terms else 0.0
    by_terms = share >= TERM_SHARE and (len(hits) >= 2 or bool(set(hits) & error.codes))
    if (conflict or similarity < threshold) and not by_terms:
        return None
    return WEIGHTS["vector"] * similarity + WEIGHTS["terms"] * share, share


def tag_words(tag: str) -> list[str]:
    """The words of a tag a person chose (``redis-connection`` -> redis, connection)."""
    words = [w for w in re.split(r"[^a-z0-9]+", tag.lower()) if len(w) > 2 and not w.isdigit()]
    return list(dict.fromkeys(w for w in words if w not in STOP_WORDS and w not in NOISE))


def linked_description(tag: str, signature_texts: Sequence[str]) -> str:
    text = f"Created by a link to pattern '{tag}'."
    if signature_texts:
        text += " Its solutions fix: " + " | ".join(t[:160] for t in signature_texts)
    return text[:500]


def linked_profile(
    tag: str, signature_texts: Sequence[str], vectors: Sequence[np.ndarray]
) -> tuple[list[str], np.ndarray | None]:
    """Terms and a unit vector for a pattern known only by its tag and linked solutions."""
    named = sorted({c for text in signature_texts for c in codes(text)})
    found = list(dict.fromkeys(tag_words(tag) + named))[:MAX_PROFILE_TERMS] or [tag.lower()]
    if not vectors:
        return found, None
    mean = np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(mean))
    return found, (mean / norm).astype(np.float32) if norm > 0 else None
