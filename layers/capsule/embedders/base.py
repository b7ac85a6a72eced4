"""The embedder contract: texts in, unit float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    model_id: str  # stored with every memory; search compares only vectors of one model
    dim: int

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        """A (len(texts), dim) float32 array of L2-normalised rows.

        ``kind`` is "document" or "query", for providers that embed the two differently.
        Raises :class:`capsule.core.errors.Unavailable` when the model or provider cannot answer.
        """


@dataclass(frozen=True)
class EmbedderInfo:
    """Which embedder is in use, for health and explanations."""

    name: str  # voyage | openai | minilm | hashing (or the model id of another)
    model: str
    dims: int
    reason: str | None  # why it was chosen (capsule.embedders.choice), when known

    def sentence(self) -> str:
        text = f"{self.name} ({self.model}, {self.dims} dimensions)"
        return f"{text}: {self.reason}" if self.reason else text


def describe(embedder: Embedder) -> EmbedderInfo:
    """Embedders may carry ``name`` and ``reason``; any other embedder is named by its model."""
    return EmbedderInfo(
        name=getattr(embedder, "name", None) or embedder.model_id,
        model=embedder.model_id,
        dims=embedder.dim,
        reason=getattr(embedder, "reason", None),
    )


def normalize(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)
