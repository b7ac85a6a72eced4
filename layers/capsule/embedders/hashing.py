"""A deterministic embedder with no model: feature hashing of words and character trigrams.

The same text gives the same vector in every process and on every machine (blake2b, not
Python's salted ``hash``). It knows no meaning beyond shared words and spellings, which is
what tests and offline fallbacks need.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from ..text import tokens
from .base import normalize


_KNOWN_MAX = 100_000  # features whose bucket is kept (a few MB)


class HashingEmbedder:
    name = "hashing"
    # A vector is computed faster than a store reads one (and far faster than a write):
    # CachedEmbedder passes this embedder through, so a search writes nothing to the store.
    worth_caching = False

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.model_id = f"hashing-v1-{dim}"
        self._known: dict[str, tuple[int, float]] = {}

    def _features(self, text: str) -> list[str]:
        words = tokens(text)
        grams = [f"#{w[i:i + 3]}" for w in words if len(w) > 3 for i in range(len(w) - 2)]
        return words + grams

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            buckets, weights = self._weights(self._features(text))
            # Unbuffered, in order; the weights are halves, so every sum is exact either way.
            np.add.at(out[row], buckets, weights)
            if not out[row].any():
                out[row, 0] = 1.0  # an empty text still gets a unit vector
        return normalize(out)

    def _weights(self, features: list[str]) -> tuple[list[int], list[float]]:
        """Each feature's bucket and signed weight; a feature seen before is not hashed again
        (words repeat, and hashing them was most of an embedding)."""
        known, buckets, weights = self._known, [], []
        for feature in features:
            hit = known.get(feature)
            if hit is None:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                sign = 1.0 if digest[4] & 1 else -1.0
                hit = (int.from_bytes(digest[:4], "little") % self.dim,
                       sign * (0.5 if feature.startswith("#") else 1.0))
                if len(known) >= _KNOWN_MAX:
                    known.clear()
                known[feature] = hit
            buckets.append(hit[0])
            weights.append(hit[1])
        return buckets, weights
