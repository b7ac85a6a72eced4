"""Hosted embedders: Voyage AI and OpenAI, through their HTTP APIs.

Batched, with retries and a timeout on every call (:class:`~capsule.embedders.http.JsonClient`,
one kept-alive connection, standard library only: the SDKs would cost a cold Lambda 85 MB and
over a second of imports for one POST). Any provider error becomes :class:`Unavailable`, so
the service can store the memory as pending and embed it later instead of losing it.

``base_url`` (``VOYAGE_BASE_URL`` / ``OPENAI_BASE_URL``) points them elsewhere: a gateway, or a
stand-in on loopback (tests); ``client`` (tests) is anything with ``post(path, payload) -> dict``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import Unavailable
from .base import normalize
from .http import JsonClient


class _Remote:
    model_id: str
    dim: int
    batch_size = 128

    def _call(self, texts: list[str], kind: str) -> list[list[float]]:
        raise NotImplementedError

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start:start + self.batch_size])
            try:
                rows.extend(self._call(batch, kind))
            except Exception as exc:  # any client error: the provider could not embed
                raise Unavailable(f"{self.model_id} could not embed: {type(exc).__name__}: {exc}") from exc
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize(np.asarray(rows, dtype=np.float32))


# Per request: a provider that does not answer costs a write at most about
# TIMEOUT_S * (1 + RETRIES) before it is stored as pending (then FailFast answers at once).
TIMEOUT_S = 15.0
RETRIES = 2

VOYAGE_URL = "https://api.voyageai.com/v1"
OPENAI_URL = "https://api.openai.com/v1"


def _vectors(response: Any, count: int) -> list[list[float]]:
    """The embeddings of a ``{"data": [{"index", "embedding"}]}`` answer, in input order."""
    data = response.get("data") if isinstance(response, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise ValueError(f"expected {count} embeddings, the answer holds {len(data) if isinstance(data, list) else 0}")
    return [item["embedding"] for item in sorted(data, key=lambda d: d["index"])]


class VoyageEmbedder(_Remote):
    name = "voyage"

    def __init__(self, api_key: str, *, model: str = "voyage-3.5", dim: int = 1024,
                 timeout_s: float = TIMEOUT_S, retries: int = RETRIES, client: Any = None,
                 base_url: str | None = None) -> None:
        self._client = client or JsonClient(base_url or VOYAGE_URL, api_key, timeout_s=timeout_s, retries=retries)
        self.model_id, self.dim = model, dim

    def _call(self, texts: list[str], kind: str) -> list[list[float]]:
        payload = {"input": texts, "model": self.model_id, "input_type": kind}
        return _vectors(self._client.post("/embeddings", payload), len(texts))


class OpenAIEmbedder(_Remote):
    name = "openai"

    def __init__(self, api_key: str, *, model: str = "text-embedding-3-small", dim: int = 1536,
                 timeout_s: float = TIMEOUT_S, retries: int = RETRIES, client: Any = None,
                 base_url: str | None = None) -> None:
        self._client = client or JsonClient(base_url or OPENAI_URL, api_key, timeout_s=timeout_s, retries=retries)
        self.model_id, self.dim = model, dim

    def _call(self, texts: list[str], kind: str) -> list[list[float]]:
        payload = {"input": texts, "model": self.model_id, "encoding_format": "float"}
        return _vectors(self._client.post("/embeddings", payload), len(texts))
