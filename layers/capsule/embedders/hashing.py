"""A deterministic embedder with no model: feature hashing of words and character trigrams.

The same text gives the same vector in every process and on every machine (blake2b, not
Python's salted ``hash``). It knows no meaning beyond shared words and spellings, which is
what tests and offline fallbacks need.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from itertools import chain

import numpy as np

from ..core.text import tokens
from .base import normalize

_KNOWN_MAX = 100_000  # words whose features' buckets are kept (a few MB)


class HashingEmbedder:
    name = "hashing"
    # A vector is computed faster than a store reads one (and far faster than a write):
    # CachedEmbedder passes this embedder through, so a search writes nothing to the store.
    worth_caching = False

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.model_id = f"hashing-v1-{dim}"
        self._known: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {}

    @staticmethod
    def _features(word: str) -> list[str]:
        """A word and, when longer than three letters, its character trigrams."""
        return [word, *(f"#{word[i : i + 3]}" for i in range(len(word) - 2) if len(word) > 3)]

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            buckets, weights = self._weights(Counter(tokens(text)))
            # Unbuffered; the weights are halves times small counts, so every sum is exact in any order.
            np.add.at(out[row], buckets, weights)
            if not out[row].any():
                out[row, 0] = 1.0  # an empty text still gets a unit vector
        return normalize(out)

    def _weights(self, words: Counter[str]) -> tuple[list[int], np.ndarray]:
        """Each feature's bucket and signed weight, times its word's count in the text. Words
        repeat, in a text and across texts: each distinct word is split and hashed once, and
        a text costs a step per distinct word, not per feature (issue 32: a 10-chunk ingest's
        embedding, 32 -> 24 ms CPU; the vectors are the same)."""
        known = self._known
        hits = [known.get(word) or self._learn(word) for word in words]
        buckets = list(chain.from_iterable(hit[0] for hit in hits))
        weights = np.fromiter(chain.from_iterable(hit[1] for hit in hits), dtype=np.float64, count=len(buckets))
        return buckets, weights * np.repeat(list(words.values()), [len(hit[0]) for hit in hits])

    def _learn(self, word: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
        if len(self._known) >= _KNOWN_MAX:
            self._known.clear()
        hit = self._known[word] = self._hashed(self._features(word))
        return hit

    def _hashed(self, features: list[str]) -> tuple[tuple[int, ...], tuple[float, ...]]:
        buckets, weights = [], []
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            sign = 1.0 if digest[4] & 1 else -1.0
            buckets.append(int.from_bytes(digest[:4], "little") % self.dim)
            weights.append(sign * (0.5 if feature.startswith("#") else 1.0))
        return tuple(buckets), tuple(weights)
