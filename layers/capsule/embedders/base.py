"""The embedder contract: texts in, unit float32 vectors out."""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    model_id: str  # stored with every memory; search compares only vectors of one model
    dim: int

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        """A (len(texts), dim) float32 array of L2-normalised rows.

        ``kind`` is "document" or "query", for providers that embed the two differently.
        Raises :class:`capsule.errors.Unavailable` when the model or provider cannot answer.
        """


def normalize(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)
