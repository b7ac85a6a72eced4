"""A deterministic embedder with no model: feature hashing of words and character trigrams.

The same text gives the same vector in every process and on every machine (blake2b, not
Python's salted ``hash``). It knows no meaning beyond shared words and spellings, which is
what tests and offline fallbacks need.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..core import text as _text
from ..search import terms
from .base import normalize

_KNOWN_MAX = 100_000  # words whose features' buckets are kept (a few MB)
_STATUS_KEY = "\x00"  # marks a joined status token (``http_503``) among the words: no word holds it


class HashingEmbedder:
    name = "hashing"
    # A vector is computed faster than a store reads one (and far faster than a write):
    # CachedEmbedder passes this embedder through, so a search writes nothing to the store.
    worth_caching = False

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.model_id = f"hashing-v1-{dim}"
        self._forget()

    def _forget(self) -> None:
        """The kept words: word -> id, and each id's features as one run of the flat arrays
        (``_first[id]``, ``_count[id]`` entries of ``_buckets`` and ``_weights``)."""
        self._ids: dict[str, int] = {}
        self._tokens: dict[str, tuple[list[int], list[float]]] = {}
        self._first = np.zeros(1024, dtype=np.int64)
        self._count = np.zeros(1024, dtype=np.int64)
        self._buckets = np.zeros(8192, dtype=np.int64)
        self._weights = np.zeros(8192, dtype=np.float64)
        self._used = 0  # entries of _buckets/_weights in use

    @staticmethod
    def _features(word: str) -> list[str]:
        """A word and, when longer than three letters, its character trigrams."""
        return [word, *(f"#{word[i : i + 3]}" for i in range(len(word) - 2) if len(word) > 3)]

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        """Each text's vector: the signed weights of its tokens' features summed in their buckets.

        Done a word at a time, for all texts at once (issue 32): a text's words are counted
        (each word stands for the tokens :func:`capsule.core.text.tokens` makes of it), each
        distinct word's features are kept from the first time it is seen, and one ``bincount``
        sums every text's features. The weights are halves times small counts, so every sum is
        exact in any order: the vectors are the same, bit for bit, as summing token by token."""
        if len(self._ids) >= _KNOWN_MAX:
            self._forget()
        ids: list[int] = []
        counts: list[int] = []
        sizes: list[int] = []
        for text in texts:
            found_words, statuses = terms.words(text)
            words = Counter(found_words)
            for status in statuses:
                words[_STATUS_KEY + status] += 1
            known = list(map(self._ids.get, words))
            if None in known:
                known = [self._learn(word) if i is None else i for word, i in zip(words, known)]
            ids.extend(known)  # type: ignore[arg-type]
            counts.extend(words.values())
            sizes.append(len(words))
        dim, n = self.dim, len(texts)
        id_array = np.asarray(ids, dtype=np.int64)
        lengths = self._count[id_array]
        first = self._first[id_array]
        total = int(lengths.sum())
        # The entries of every word's run, in order: first[w] + 0 .. count[w] - 1 for each word w.
        starts = np.cumsum(lengths) - lengths
        entries = np.arange(total, dtype=np.int64) + np.repeat(first - starts, lengths)
        rows = np.repeat(np.repeat(np.arange(n, dtype=np.int64), sizes), lengths)
        weights = self._weights[entries] * np.repeat(np.asarray(counts, dtype=np.float64), lengths)
        sums = np.bincount(rows * dim + self._buckets[entries], weights=weights, minlength=n * dim)
        out = sums.reshape(n, dim).astype(np.float32)
        out[~out.any(axis=1), 0] = 1.0  # an empty text still gets a unit vector
        return normalize(out)

    def _learn(self, word: str) -> int:
        """The id of a word not seen yet, its tokens' features appended to the flat arrays."""
        if word.startswith(_STATUS_KEY):
            found: tuple[str, ...] = (word[len(_STATUS_KEY) :],)
        else:
            found = _text._word_tokens(word, True)
        buckets: list[int] = []
        weights: list[float] = []
        for token in found:
            hit = self._tokens.get(token)
            if hit is None:
                hit = self._tokens[token] = self._hashed(self._features(token))
            buckets.extend(hit[0])
            weights.extend(hit[1])
        index = len(self._ids)
        if index >= len(self._first):
            self._first = np.resize(self._first, 2 * len(self._first))
            self._count = np.resize(self._count, 2 * len(self._count))
        used, size = self._used, len(buckets)
        if used + size > len(self._buckets):
            grown = max(2 * len(self._buckets), used + size)
            self._buckets = np.resize(self._buckets, grown)
            self._weights = np.resize(self._weights, grown)
        self._buckets[used : used + size] = buckets
        self._weights[used : used + size] = weights
        self._first[index], self._count[index] = used, size
        self._used = used + size
        self._ids[word] = index
        return index

    def _hashed(self, features: list[str]) -> tuple[list[int], list[float]]:
        buckets, weights = [], []
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            sign = 1.0 if digest[4] & 1 else -1.0
            buckets.append(int.from_bytes(digest[:4], "little") % self.dim)
            weights.append(sign * (0.5 if feature.startswith("#") else 1.0))
        return buckets, weights
