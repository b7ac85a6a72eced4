"""Hosted embedders: Voyage AI and OpenAI, through their HTTP APIs.

Batched, with retries and a timeout on every call (:class:`~capsule.embedders.http.JsonClient`,
one kept-alive connection, standard library only: the SDKs would cost a cold Lambda 85 MB and
over a second of imports for one POST). Any provider error becomes :class:`Unavailable`, so
the service can store the memory as pending and embed it later instead of losing it.

``base_url`` (``VOYAGE_BASE_URL`` / ``OPENAI_BASE_URL``) points them elsewhere: a gateway, or a
stand-in on loopback (tests); ``client`` (tests) is anything with
``post(path, payload, *, timeout) -> dict``.

Timeouts: each call takes at most what the request has left (capsule.core.deadline, less the
fallback's reserve) and at most ``timeout_s``, retries included: that time is passed to the
client, whose attempts and backoff stay inside it (so a call the request stopped waiting for
ends too, instead of holding a connection), and :func:`bounded` ends the request's wait at
that time whatever the client does (a DNS lookup, say, that no socket timeout bounds).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from ..core import deadline
from ..core.errors import Unavailable
from .base import normalize
from .http import JsonClient

# Inside a 10-15 s function: one attempt, one retry, and the whole call bounded by the request
# (then FailFast answers at once for a while, so the memory is stored as pending without waiting).
TIMEOUT_S = 8.0
RETRIES = 1


def bounded(call: Callable[[], Any], seconds: float) -> Any:
    """``call()``, or TimeoutError after ``seconds``. The call goes on in its thread until the
    timeout it was given ends it (JsonClient's own connection, never handed to another call);
    the request does not wait for it."""
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
            batch = list(texts[start : start + self.batch_size])
            seconds = deadline.for_embedder(self.timeout_s)  # Unavailable when no time is left
            try:
                rows.extend(bounded(partial(self._call, batch, kind, seconds), seconds))
            except Exception as exc:  # any client error: the provider could not embed
                raise Unavailable(f"{self.model_id} could not embed: {type(exc).__name__}: {exc}") from exc
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize(np.asarray(rows, dtype=np.float32))


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

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "voyage-3.5",
        dim: int = 1024,
        timeout_s: float = TIMEOUT_S,
        retries: int = RETRIES,
        client: Any = None,
        base_url: str | None = None,
    ) -> None:
        self._client = client or JsonClient(base_url or VOYAGE_URL, api_key, timeout_s=timeout_s, retries=retries)
        self.model_id, self.dim, self.timeout_s = model, dim, timeout_s

    def _call(self, texts: list[str], kind: str, timeout: float) -> list[list[float]]:
        payload = {"input": texts, "model": self.model_id, "input_type": kind}
        return _vectors(self._client.post("/embeddings", payload, timeout=timeout), len(texts))


class OpenAIEmbedder(_Remote):
    name = "openai"

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "text-embedding-3-small",
        dim: int = 1536,
        timeout_s: float = TIMEOUT_S,
        retries: int = RETRIES,
        client: Any = None,
        base_url: str | None = None,
    ) -> None:
        self._client = client or JsonClient(base_url or OPENAI_URL, api_key, timeout_s=timeout_s, retries=retries)
        self.model_id, self.dim, self.timeout_s = model, dim, timeout_s

    def _call(self, texts: list[str], kind: str, timeout: float) -> list[list[float]]:
        payload = {"input": texts, "model": self.model_id, "encoding_format": "float"}
        return _vectors(self._client.post("/embeddings", payload, timeout=timeout), len(texts))
