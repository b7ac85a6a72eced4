"""Matching an error against one solution's signatures: pure functions, no store, no embedder.

Three kinds of evidence, per signature:

- **regex**: one of its regexes finds the error. A regex alone proves little when it is
  broad (``ioredis``, ``npm run build``), so it counts only when the error is also related in
  meaning: its similarity reaches the signature's ``meta.min_score`` when one is set, else the
  loose :data:`REGEX_FLOOR_SHARE` of the model's threshold. When meaning cannot be judged
  (the embedder is down) a regex counts alone.
- **meaning**: the cosine between the error and the signature reaches the signature's
  ``meta.min_score``, else the threshold calibrated for the embedding model
  (:func:`meaning_threshold`).
- **terms**: the error holds at least half of a signature's terms.

When the error and a signature both name error codes and share none (``NOAUTH`` is not
``ECONNREFUSED``, however alike two ioredis log lines read) the signature's meaning is no
evidence: its similarity counts as 0.

The conflict does not stop a regex that has no ``min_score`` (its author trusts it alone).

The score is banded so that its order is the ranking: a solution matched by regex and meaning
scores in [2/3, 1], one matched by meaning without a regex in [1/3, 2/3), any other (a regex
or shared terms alone, or anything while meaning cannot be judged) in [0, 1/3); inside a band,
the weighted sum of :data:`WEIGHTS`. So a regex alone never outranks a fixpack that matches by
regex and meaning, nor one whose signature means the same as the error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..core.errors import InvalidInput
from .safe_regex import cached
from .signature import codes, terms

# score = regex + meaning + keyword + track record, inside a band
WEIGHTS = {"regex": 0.45, "vector": 0.35, "keyword": 0.10, "success": 0.10}
# The cosine at which an error "means the same" as a signature differs by model: the hashing
# embedder's cosines come from shared words and spellings, MiniLM's from meaning, and unrelated
# error messages sit near 0.2-0.3 (hashing) and 0.2-0.4 (MiniLM). Chosen on the tune split of
# tests/learning/error_match_set.json and checked on its holdout split.
CALIBRATED = (("hashing-", 0.42), ("all-MiniLM-L6-v2", 0.42))
DEFAULT_THRESHOLD = 0.50  # models not measured here (Voyage, OpenAI): the stricter reading
REGEX_FLOOR_SHARE = 0.3  # a regex with no min_score needs this share of the threshold
KEYWORD_SHARE = 0.5  # share of a signature's terms that counts as evidence


def meaning_threshold(model_id: str | None) -> float:
    """The similarity that counts as the same meaning for ``model_id``."""
    for prefix, threshold in CALIBRATED:
        if model_id and model_id.startswith(prefix):
            return threshold
    return DEFAULT_THRESHOLD


@dataclass(frozen=True, slots=True)
class ErrorText:
    """What a search needs of the error, computed once per search."""

    text: str
    terms: frozenset[str]
    codes: frozenset[str]
    vector: np.ndarray | None

    @classmethod
    def of(cls, text: str, vector: np.ndarray | None) -> ErrorText:
        return cls(text, frozenset(terms(text)), frozenset(codes(text)), vector)


@dataclass(slots=True)
class Match:
    """How one solution matched: the signals (0..1), whether regex and meaning agree, why."""

    regex: float
    vector: float
    keyword: float
    confirmed: bool  # regex and meaning agree
    meaning: bool  # some signature means the same as the error
    reasons: list[str] = field(default_factory=list)


def _regex_hit(signature: dict[str, Any], error: str) -> str | None:
    for pattern in signature.get("regexes", []):
        try:
            regex = cached(pattern)
        except InvalidInput:  # stored before a stricter check: never run it
            continue
        if regex.search(error):
            return pattern
    return None


@lru_cache(maxsize=8192)
def _codes_of(text: str) -> frozenset[str]:
    return frozenset(codes(text))


@lru_cache(maxsize=8192)
def _terms_of(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def _conflict(signature: dict[str, Any], error: ErrorText) -> bool:
    """Both name their error and the names differ."""
    named = _codes_of(signature["text"])
    return bool(named and error.codes and not named & error.codes)


def _similarities(
    signatures: Sequence[dict[str, Any]], vectors: np.ndarray | None, error: ErrorText
) -> list[float | None]:
    """Each signature's similarity to the error, None when it cannot be judged."""
    if vectors is None or error.vector is None:
        return [None] * len(signatures)
    return [float(v) for v in np.clip(vectors @ error.vector, 0.0, 1.0)]


def keyword_share(signatures: Sequence[dict[str, Any]], error_terms: frozenset[str]) -> tuple[float, set[str]]:
    """The largest share of one signature's terms found in the error, and those terms."""
    best, shared = 0.0, set()
    for signature in signatures:
        sig_terms = _terms_of(signature["text"])
        if sig_terms and len(sig_terms & error_terms) / len(sig_terms) > best:
            shared = set(sig_terms & error_terms)
            best = len(shared) / len(sig_terms)
    return best, shared


@dataclass(slots=True)
class _Verdict:
    meaning: bool = False
    regex: str | None = None  # why the regex counts, when it does
    reasons: list[str] = field(default_factory=list)


def _judge(number: int, signature: dict[str, Any], sim: float | None, error: ErrorText, threshold: float) -> _Verdict:
    """Whether one signature matches the error by meaning, by regex, and why."""
    verdict = _Verdict()
    own = (signature.get("meta") or {}).get("min_score")
    needed = own if own is not None else threshold
    conflict = _conflict(signature, error)
    meant = sim if sim is None or not conflict else 0.0
    if conflict and sim is not None and sim >= needed:
        verdict.reasons.append(
            f"reads like signature {number} (similarity {sim:.2f}) but names another "
            f"error ({', '.join(sorted(error.codes))}): its meaning is not counted"
        )
    if meant is not None and meant >= needed:
        verdict.meaning = True
        verdict.reasons.append(
            f"means nearly the same as signature {number} '{signature['text'][:80]}' "
            f"(similarity {meant:.2f} >= {needed:.2f})"
        )
    pattern = _regex_hit(signature, error.text)
    if pattern is None:
        return verdict
    # The author's min_score asks for the same meaning; without one, a loose relation will do.
    floor, seen = (own, meant) if own is not None else (REGEX_FLOOR_SHARE * threshold, sim)
    if seen is None or seen >= floor:
        verdict.regex = f"regex /{pattern}/ of signature {number} matched"
    else:
        verdict.reasons.append(
            f"regex /{pattern}/ of signature {number} matched but the error differs in "
            f"meaning (similarity {seen:.2f} < {floor:.2f}): not counted"
        )
    return verdict


def match(
    signatures: Sequence[dict[str, Any]], vectors: np.ndarray | None, error: ErrorText, threshold: float
) -> Match | None:
    """The evidence that ``signatures`` (with their vectors, or None) name ``error``, or None."""
    sims = _similarities(signatures, vectors, error)
    verdicts = [_judge(n, sig, sim, error, threshold) for n, (sig, sim) in enumerate(zip(signatures, sims), 1)]
    regex_ok, meaning_ok = any(v.regex for v in verdicts), any(v.meaning for v in verdicts)
    reasons = [v.regex for v in verdicts if v.regex] + [r for v in verdicts for r in v.reasons]
    keyword, shared = keyword_share(signatures, error.terms)
    if keyword >= KEYWORD_SHARE:
        reasons.append(f"shares the signature terms {', '.join(sorted(shared))}")
    if not (regex_ok or meaning_ok or keyword >= KEYWORD_SHARE):
        return None
    known = [0.0 if _conflict(sig, error) else s for sig, s in zip(signatures, sims) if s is not None]
    return Match(
        regex=1.0 if regex_ok else 0.0,
        vector=max(known, default=0.0),
        keyword=keyword,
        confirmed=regex_ok and meaning_ok,
        meaning=meaning_ok,
        reasons=reasons,
    )


def band(found: Match) -> int:
    """2: regex and meaning; 1: meaning without a regex; 0: a regex or terms alone."""
    return 2 if found.confirmed else 1 if found.meaning else 0


def score(found: Match, success: float) -> float:
    """The weighted sum of the signals, placed in the match's third of [0, 1]."""
    w = WEIGHTS
    raw = w["regex"] * found.regex + w["vector"] * found.vector + w["keyword"] * found.keyword + w["success"] * success
    raw = min(max(raw, 0.0), 1.0)
    top = 1.0 if found.confirmed else 0.999999  # the lower bands stay below the next one
    return band(found) / 3 + min(raw, top) / 3
