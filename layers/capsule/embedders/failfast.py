"""After a hosted provider fails, answer at once for a while instead of waiting out its timeouts.

A provider that cannot be reached costs one call its full timeout and retries; the calls in
the next ``cool_s`` seconds get the same :class:`Unavailable` immediately, so a store is kept as
pending (found by keyword, embedded later by the backfill job) without every write waiting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from ..core.errors import Unavailable
from .base import Embedder

COOL_S = 60.0


class FailFast:
    def __init__(self, inner: Embedder, *, cool_s: float = COOL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.model_id, self.dim = inner.model_id, inner.dim
        self.name = getattr(inner, "name", None) or inner.model_id
        self.reason = getattr(inner, "reason", None)
        self._cool_s, self._clock = cool_s, clock
        self._until = float("-inf")
        self._last = ""
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        with self._lock:
            left = self._until - self._clock()
            last = self._last
        if left > 0:
            raise Unavailable(f"{last} (not retried for another {left:.0f}s)")
        try:
            return self.inner.embed(texts, kind=kind)
        except Unavailable as exc:
            with self._lock:
                self._until, self._last = self._clock() + self._cool_s, exc.message
            raise


__all__ = ["COOL_S", "FailFast"]
