"""Signature terms: the error codes and identifiers that name an error across wordings.

``terms("redis: connect ECONNREFUSED 127.0.0.1:6379")`` is ``["127.0.0.1:6379",
"econnrefused", "6379", "127"]``-like: words that are codes (all capitals, or letters with
digits: ``ECONNREFUSED``, ``E11000``), exception names (``TypeError``), status numbers and
ports (three or more digits), and compound identifiers (``getUserById``,
``redis.railway.internal``; these only join two errors that also share a code) — normalised through :func:`capsule.text.tokens`, so a term
is spelled the same way the keyword index spells it. Ordinary prose words are not terms.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Iterable, Sequence

from ..text import tokens

_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.\-/:][A-Za-z0-9_]+)*")
_CODE = re.compile(r"^(?=.*[A-Z])[A-Z][A-Z0-9_]{2,}$")           # ECONNREFUSED, E11000, ERR_X
_MIXED = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9_]+$")     # e11000, sha256
_EXCEPTION = re.compile(r"(Error|Exception|Fault|Panic)$")
_NUMBER = re.compile(r"^\d{3,5}$")               # HTTP statuses, ports; not long ids
_COMPOUND = re.compile(r"[a-z][A-Z]|[A-Za-z]_[A-Za-z]|[A-Za-z0-9][.:/-][A-Za-z0-9]")
# Words that look like codes but name no particular error.
NOISE = frozenset("""err error errors warn warning info debug fatal trace http https api url uri
    json html xml sql utf utf8 utf-8 todo ok null none true false get post put delete""".split())
MAX_TERMS = 40


def _is_strong(word: str) -> bool:
    """Codes, exception names and numbers name an error; identifiers only say where it was."""
    return bool(_CODE.match(word) or _MIXED.match(word) or _EXCEPTION.search(word) or _NUMBER.match(word))


def _is_term(word: str) -> bool:
    return _is_strong(word) or bool(_COMPOUND.search(word))


def terms(text: str, *, strong_only: bool = False) -> list[str]:
    """The signature terms of ``text``, deduplicated, in order of first appearance.

    ``strong_only`` keeps the codes, exception names and numbers, not the identifiers."""
    found: dict[str, None] = {}
    for match in _WORD.finditer(text[:16384]):
        word = match.group(0).strip("._-/:")
        if not word or not (_is_strong(word) if strong_only else _is_term(word)):
            continue
        normal = tokens(word, stem=False)
        whole = normal[0] if normal else word.lower()
        candidates = [whole] + [t for t in normal[1:] if _NUMBER.match(t)]
        for term in candidates:
            if term not in NOISE and len(term) > 2:
                found.setdefault(term, None)
        if len(found) >= MAX_TERMS:
            break
    return list(found)


def overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / min(|A|, |B|): 1 when the smaller set is inside the larger one."""
    left, right = set(a), set(b)
    if not left or not right:
        return 0.0
    return len(left & right) / min(len(left), len(right))


def common_terms(term_lists: Sequence[Sequence[str]], *, limit: int = 8) -> list[str]:
    """Terms that a majority of the lists share (at least two), most shared first."""
    counts = Counter(term for terms_ in term_lists for term in set(terms_))
    need = max(2, -(-len(term_lists) // 2))
    shared = [t for t, c in counts.items() if c >= need]
    shared.sort(key=lambda t: (-counts[t], t))
    return shared[:limit]


def _slug(term: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", term.lower()).strip("-")


def stable_tag(signature_terms: Sequence[str], category: str) -> str:
    """A readable tag that is the same for the same terms, in any order, on every machine."""
    ordered = sorted(set(signature_terms))
    head = "-".join(s for s in (_slug(t) for t in signature_terms[:3]) if s)[:48].strip("-") or "pattern"
    digest = hashlib.sha256(("\x1f".join([category, *ordered])).encode()).hexdigest()[:8]
    return f"{head}-{digest}"
