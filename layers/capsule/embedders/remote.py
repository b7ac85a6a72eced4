"""Hosted embedders through their official clients: Voyage AI and OpenAI.

Batched, with the clients' own retries and a timeout on every call. Any provider error
becomes :class:`Unavailable`, so the service can store the memory as pending and embed it
later instead of losing it.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import Unavailable
from .base import normalize


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


class VoyageEmbedder(_Remote):
    name = "voyage"

    def __init__(self, api_key: str, *, model: str = "voyage-3.5", dim: int = 1024,
                 timeout_s: float = TIMEOUT_S, retries: int = RETRIES, client: Any = None) -> None:
        if client is None:
            try:
                import voyageai
            except ImportError as exc:
                raise Unavailable("Voyage embeddings need: pip install 'capsule-memory[voyage]'") from exc
            client = voyageai.Client(api_key=api_key, max_retries=retries, timeout=timeout_s)
        self._client = client
        self.model_id, self.dim = model, dim

    def _call(self, texts: list[str], kind: str) -> list[list[float]]:
        return self._client.embed(texts, model=self.model_id, input_type=kind).embeddings


class OpenAIEmbedder(_Remote):
    name = "openai"

    def __init__(self, api_key: str, *, model: str = "text-embedding-3-small", dim: int = 1536,
                 timeout_s: float = TIMEOUT_S, retries: int = RETRIES, client: Any = None) -> None:
        if client is None:
            try:
                import openai
            except ImportError as exc:
                raise Unavailable("OpenAI embeddings need: pip install 'capsule-memory[openai]'") from exc
            client = openai.OpenAI(api_key=api_key, max_retries=retries, timeout=timeout_s)
        self._client = client
        self.model_id, self.dim = model, dim

    def _call(self, texts: list[str], kind: str) -> list[list[float]]:
        response = self._client.embeddings.create(model=self.model_id, input=texts)
        return [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
