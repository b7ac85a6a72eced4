"""Readable pattern tags made from what a cluster of errors says, not from how it was logged.

``readable_tag`` takes the cluster's texts and shared terms and returns a slug such as
``redis-enotfound``: the subject (the most widely shared plain word, preferring a part of a
shared identifier such as ``redis`` in ``redis.railway.internal``) and then the most shared
error code; an exception name or a constant of several words stands alone
(``modulenotfounderror``, ``err-pnpm-outdated-lockfile``); with no code, up to three words. Timestamps, numbers, hex and uuid ids, paths and locations never enter it
(:func:`capsule.learning.signature.is_incidental`), so the same error logged at another time,
by another request or on another machine gets the same tag.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from ..core.text import STOP_WORDS, tokens
from .signature import NOISE, codes, is_incidental

# Words every error message uses: they say that something failed, not what.
GENERIC = frozenset(
    """error errors failed failure fail fails failing cannot could couldn unable while during
    again retry retrying exception warning fatal unhandled event code line file process exited exit status
    received request response because after before found want need needs must should something went wrong
    oops please check make sure message reason caused details more here running run value type object
    undefined null none true false new old use used using""".split()
)
MAX_WORDS = 3


def _words(text: str) -> set[str]:
    out = set()
    for word in re.findall(r"[A-Za-z0-9_.:/\-]+", text):
        if is_incidental(word):
            continue
        for part in tokens(word, stem=False):
            if (
                part.isalpha()
                and len(part) > 2
                and part not in STOP_WORDS
                and part not in NOISE
                and part not in GENERIC
            ):
                out.add(part)
    return out


def _majority(sets: Sequence[set[str]]) -> Counter:
    counts = Counter(w for s in sets for w in s)
    need = max(1, -(-len(sets) // 2))
    return Counter({w: c for w, c in counts.items() if c >= need})


def slug(parts: Sequence[str]) -> str:
    text = "-".join(re.sub(r"[^a-z0-9]+", "-", p.lower()).strip("-") for p in parts)
    return re.sub(r"-{2,}", "-", text).strip("-")[:64].strip("-")


def _self_describing(code: str) -> bool:
    """An exception name or a constant of several words (``ModuleNotFoundError``,
    ``ERR_PNPM_OUTDATED_LOCKFILE``) says what failed; ``ENOTFOUND`` needs its subject."""
    return "_" in code or code.endswith(("error", "exception", "fault", "panic"))


def readable_tag(texts: Sequence[str], shared_terms: Sequence[str]) -> str:
    """``subject-code`` from the texts of one cluster; ``pattern`` when they share nothing."""
    shared_codes = _majority([codes(t) for t in texts])
    code = min(shared_codes, key=lambda c: (-shared_codes[c], c), default=None)
    if code and _self_describing(code):
        return slug([code])
    words = _majority([{w for w in _words(t) if not code or w not in code} for t in texts])
    in_identifiers = {p for t in shared_terms for p in re.split(r"[^a-z0-9]+", t)[:1]}
    ranked = sorted(words, key=lambda w: (-words[w], w not in in_identifiers, w))
    return slug(ranked[:1] + [code] if code else ranked[:MAX_WORDS]) or "pattern"


def free_tag(base: str, taken: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3``... when another pattern of the category holds it."""
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"
