"""An embedder wrapper that remembers vectors by (model, sha256 of text) for 60 days.

An embedder whose ``worth_caching`` is False (the hashing one: a vector costs less than the
store's read of it, and a fiftieth of the write) is passed through: nothing is read or written.

Query vectors (``kind="query"``) skip a store whose ``keeps_query_vectors`` is False (the hosted
one, :class:`~capsule.store.mongo.MongoStore`): there a search would pay a read and two writes of
the cluster's operations for a vector the service keeps per tenant in memory instead
(:mod:`capsule.service.search`). A store without the attribute (SQLite) keeps them as before.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

import numpy as np

from ..core import limits
from ..core.clock import Clock, system_clock
from ..core.errors import Unavailable
from ..core.text import sha256
from ..store.base import MemoryStore
from .base import Embedder

logger = logging.getLogger("capsule.embedders")


class CachedEmbedder:
    def __init__(self, inner: Embedder, store: MemoryStore, clock: Clock = system_clock) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.name = getattr(inner, "name", None) or inner.model_id
        self.reason = getattr(inner, "reason", None)
        self._store = store
        self._clock = clock
        self.worth_caching = getattr(inner, "worth_caching", True)
        self._queries_in_store = getattr(store, "keeps_query_vectors", True)

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        if not self.worth_caching or (kind == "query" and not self._queries_in_store):
            return self.inner.embed(texts, kind=kind)
        keys = [sha256(f"{kind}\x00{t}") for t in texts]
        now = self._clock()
        cached = self._store.cache_get(
            self.model_id, keys, fresh_after=now - timedelta(days=limits.EMBEDDING_CACHE_DAYS)
        )
        missing = [i for i, key in enumerate(keys) if key not in cached]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if missing:
            fresh = self.inner.embed([texts[i] for i in missing], kind=kind)
            out[missing] = fresh
            self._remember(keys, missing, fresh, now)
        for i, key in enumerate(keys):
            if key in cached:
                out[i] = cached[key]
        return out

    def _remember(self, keys: list[str], missing: list[int], fresh: np.ndarray, now) -> None:
        # The cache only saves work: a store that cannot take the write (busy, full) must not
        # fail the search or the store that asked for the vectors.
        try:
            self._store.cache_put(self.model_id, {keys[i]: fresh[j] for j, i in enumerate(missing)}, at=now)
        except Unavailable as exc:
            logger.warning("embedding cache not written: %s", exc.message)
