"""Hosted embedders through their official clients: Voyage AI and OpenAI.

Batched, with the clients' own retries and a timeout on every call. Any provider error
becomes :class:`Unavailable`, so the service can store the memory as pending and embed it
later instead of losing it.

Timeouts: each call takes at most what the request has left (capsule.deadline, less the
fallback's reserve) and at most ``timeout_s``, retries included: the client's own timeout bounds
one attempt, and the wait for the whole call is bounded here, however the client retries.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

from .. import deadline
from ..errors import Unavailable
from .base import normalize


# Inside a 10-15 s function: one attempt, one retry, and the whole call bounded by the request.
TIMEOUT_S = 8.0
RETRIES = 1


def bounded(call: Callable[[], Any], seconds: float) -> Any:
    """``call()``, or TimeoutError after ``seconds``. The call goes on in its thread until the
    client's own timeout ends it; the request does not wait for it."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="capsule-embed", daemon=True).start()
    if not done.wait(seconds):
        raise TimeoutError(f"no answer within {seconds:.2f}s")
    if "error" in box:
        raise box["error"]
    return box["value"]


class _Remote:
    model_id: str
    dim: int
    batch_size = 128
    timeout_s = TIMEOUT_S

    def _call(self, texts: list[str], kind: str, timeout: float) -> list[list[float]]:
        raise NotImplementedError

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start:start + self.batch_size])
            seconds = deadline.for_embedder(self.timeout_s)  # Unavailable when no time is left
            try:
                rows.extend(bounded(lambda: self._call(batch, kind, seconds), seconds))
            except Exception as exc:  # any client error: the provider could not embed
                raise Unavailable(f"{self.model_id} could not embed: {type(exc).__name__}: {exc}") from exc
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize(np.asarray(rows, dtype=np.float32))


class VoyageEmbedder(_Remote):
    def __init__(self, api_key: str, *, model: str = "voyage-3.5", dim: int = 1024,
                 timeout_s: float = TIMEOUT_S, retries: int = RETRIES, client: Any = None) -> None:
        if client is None:
            try:
                import voyageai
            except ImportError as exc:
                raise Unavailable("Voyage embeddings need: pip install 'capsule-memory[voyage]'") from exc
            client = voyageai.Client(api_key=api_key, max_retries=retries, timeout=timeout_s)
        self._client = client
        self.model_id, self.dim, self.timeout_s = model, dim, timeout_s

    def _call(self, texts: list[str], kind: str, timeout: float) -> list[list[float]]:
        # The Voyage client takes its timeout per client only: bounded() ends the wait sooner.
        return self._client.embed(texts, model=self.model_id, input_type=kind).embeddings


class OpenAIEmbedder(_Remote):
    def __init__(self, api_key: str, *, model: str = "text-embedding-3-small", dim: int = 1536,
                 timeout_s: float = TIMEOUT_S, retries: int = RETRIES, client: Any = None) -> None:
        if client is None:
            try:
                import openai
            except ImportError as exc:
                raise Unavailable("OpenAI embeddings need: pip install 'capsule-memory[openai]'") from exc
            client = openai.OpenAI(api_key=api_key, max_retries=retries, timeout=timeout_s)
        self._client = client
        self.model_id, self.dim, self.timeout_s = model, dim, timeout_s

    def _call(self, texts: list[str], kind: str, timeout: float) -> list[list[float]]:
        client = self._client.with_options(timeout=timeout) if hasattr(self._client, "with_options") else self._client
        response = client.embeddings.create(model=self.model_id, input=texts)
        return [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
