"""Signature terms: the error codes and identifiers that name an error across wordings.

``terms("redis: connect ECONNREFUSED 127.0.0.1:6379")`` is ``["127.0.0.1:6379",
"econnrefused", "6379", "127"]``-like: words that are codes (all capitals, or letters with
digits: ``ECONNREFUSED``, ``E11000``), exception names (``TypeError``), status numbers and
ports (three or more digits), and compound identifiers (``getUserById``,
``redis.railway.internal``; these only join two errors that also share a code) — normalised through :func:`capsule.core.text.tokens`, so a term
is spelled the same way the keyword index spells it. Ordinary prose words are not terms, and
neither is what differs between two sightings of one error: timestamps, dates and times, hex
and uuid ids, file paths and ``file:line:col`` locations (:func:`is_incidental`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from ..core.text import tokens

_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.\-/:][A-Za-z0-9_]+)*")
_CODE = re.compile(r"^(?=.*[A-Z])[A-Z][A-Z0-9_]{2,}$")  # ECONNREFUSED, E11000, ERR_X
_MIXED = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9_]+$")  # e11000, sha256
_EXCEPTION = re.compile(r"(Error|Exception|Fault|Panic)$")
_NUMBER = re.compile(r"^\d{3,5}$")  # HTTP statuses, ports; not long ids
_COMPOUND = re.compile(r"[a-z][A-Z]|[A-Za-z]_[A-Za-z]|[A-Za-z0-9][.:/-][A-Za-z0-9]")
# Words that look like codes but name no particular error.
NOISE = frozenset(
    """err error errors warn warning info debug fatal trace http https api url uri
    json html xml sql utf utf8 utf-8 todo ok null none true false get post put delete""".split()
)
MAX_TERMS = 40
# What differs between two sightings of the same error: when, which request, which file and line.
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}|^\d{1,2}:\d{2}(:\d{2})?|\d[tT]\d{2}[:_]\d{2}")
_HEX_ID = re.compile(r"^(0x)?(?=(?:[0-9]*[a-f]){2})(?=(?:[a-f]*[0-9]){2})[0-9a-f]{7,}$", re.I)
_LONG_NUMBER = re.compile(r"^\d{6,}$")
_LOCATION = re.compile(r"[/\\]|\.[a-z]{1,4}:\d+|:\d+:\d+$")  # a path, file.js:12, x:107:26
_MIN_CODE = 5  # error codes that name one error (NOAUTH, EAI_AGAIN); SSL, DNS, AWS name a subject


def is_incidental(word: str) -> bool:
    """A timestamp, an id, a path or a source location: true of this sighting, not of the error."""
    if _TIMESTAMP.search(word) or _LOCATION.search(word) or _LONG_NUMBER.match(word):
        return True
    return any(_HEX_ID.match(part) for part in re.split(r"[.\-_:]", word))


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
        if not word or is_incidental(word) or not (_is_strong(word) if strong_only else _is_term(word)):
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


_FRAME = re.compile(r"^\s*(at\s.*|File \".*\", line \d+.*|\d+: 0x[0-9a-f]+ .*)$", re.M)


def salient_text(text: str) -> str:
    """``text`` without what differs between two sightings of one error: stack frames,
    timestamps, ids, paths and source locations. What gets embedded, so that the noise
    around an error does not drown its meaning."""
    kept = _WORD.sub(
        lambda m: "" if is_incidental(m.group(0).strip("._-/:")) else m.group(0), _FRAME.sub("", text[:16384])
    )
    kept = re.sub(r"[ \t]+", " ", kept)
    kept = "\n".join(line.strip() for line in kept.splitlines() if line.strip())
    return kept or text


def codes(text: str) -> set[str]:
    """The error codes and exception names ``text`` names, each of which names one error
    (``NOAUTH``, ``EAI_AGAIN``, ``TypeError``; the last part of a dotted name:
    ``jwt.exceptions.ExpiredSignatureError`` names ``expiredsignatureerror``). Numbers and
    short acronyms (``SSL``, ``DNS``) name a subject, not an error, and are left out."""
    out = set()
    for term in terms(text, strong_only=True):
        last = term.rsplit(".", 1)[-1]
        if len(last) >= _MIN_CODE and not last.isdigit():
            out.add(last)
    return out


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
