"""One model for every handler worker of ``capsule serve``: the parent holds it, workers ask it.

The offline model costs ~165 MB of RSS in each process that embeds; with a model in every
worker, ``capsule serve`` grows by that much per worker after its first embedding.
:class:`EmbedServer` runs in the serve parent beside the one model, on a Unix socket in a
private (0700) folder, with an authentication key the workers are given; :class:`SharedEmbedder`
is the workers' stand-in: one request per ``embed`` call (a whole batch), answered with the
vectors. A model holder that is gone or stuck makes the call raise :class:`Unavailable` (503)
within the call's time, never a hang. Hosted embedders and the hashing one are not shared: they
hold no model.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Sequence
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Settings
from ..core import deadline
from ..core.errors import Unavailable
from .base import Embedder
from .remote import bounded

log = logging.getLogger("capsule.embedders")

TIMEOUT_S = 60.0  # the longest route's time: an import's batch on a busy model
CONNECT_S = 5.0  # connecting and authenticating


def worth_sharing(settings: Settings) -> bool:
    """Whether the settings pick an embedder that holds a model in memory (the offline MiniLM),
    worth one holder; the others (hashing, hosted) are built by each process as before. The same
    choice :func:`capsule.embedders.build_embedder` makes."""
    from . import minilm
    from .choice import choose_embedder

    return choose_embedder(settings, offline_available=lambda: minilm.available(settings.model_dir)).name == "minilm"


class EmbedServer:
    """Serves ``embedder`` on a Unix socket, a thread per connected worker."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._folder = Path(tempfile.mkdtemp(prefix="capsule-embed-"))  # mode 0700
        self.address = str(self._folder / "embed.sock")
        self.authkey = secrets.token_bytes(32)
        self._listener = Listener(self.address, family="AF_UNIX", authkey=self.authkey)
        self._closed = threading.Event()
        self._open: set[Connection] = set()
        self._thread = threading.Thread(target=self._accept, name="capsule-embed-server", daemon=True)
        self._thread.start()

    def client_spec(self) -> dict[str, Any]:
        """What a worker needs to build its :class:`SharedEmbedder` (picklable)."""
        e = self.embedder
        return {
            "address": self.address,
            "authkey": self.authkey,
            "model_id": e.model_id,
            "dim": e.dim,
            "name": getattr(e, "name", None),
            "reason": getattr(e, "reason", None),
        }

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn = self._listener.accept()
            except Exception:  # a client that failed authentication, or the listener closed
                if self._closed.is_set():
                    return
                continue
            threading.Thread(target=self._serve, args=(conn,), name="capsule-embed-conn", daemon=True).start()

    def _serve(self, conn: Connection) -> None:
        self._open.add(conn)
        with conn:
            while not self._closed.is_set():
                try:
                    texts, kind = conn.recv()
                except (EOFError, OSError):
                    break
                try:
                    answer: tuple[str, Any] = (
                        "ok",
                        np.asarray(self.embedder.embed(texts, kind=kind), dtype=np.float32),
                    )
                except Unavailable as exc:
                    answer = ("unavailable", exc.message)
                except Exception as exc:  # the worker says so as 503, the holder goes on
                    log.exception("the shared embedder failed")
                    answer = ("unavailable", f"{type(exc).__name__}: {exc}")
                try:
                    conn.send(answer)
                except OSError:  # the worker stopped waiting (its timeout) or ended
                    break
        self._open.discard(conn)

    def close(self) -> None:
        """Stop: no new connection, and the open ones end (their workers get Unavailable)."""
        self._closed.set()
        try:
            self._listener.close()
            for conn in list(self._open):
                try:  # wakes the thread reading it: shutdown, not close, ends a blocked recv
                    with socket.socket(fileno=os.dup(conn.fileno())) as sock:
                        sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        finally:
            shutil.rmtree(self._folder, ignore_errors=True)


class SharedEmbedder:
    """A worker's embedder: the model held by :class:`EmbedServer`, one request per batch."""

    worth_caching = True

    def __init__(
        self,
        address: str,
        authkey: bytes,
        model_id: str,
        dim: int,
        name: str | None = None,
        reason: str | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        self.address, self._authkey = address, authkey
        self.model_id, self.dim = model_id, dim
        self.name = name or model_id
        self.reason = reason
        self.timeout_s = timeout_s
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> Connection:
        if self._conn is None:
            if not os.path.exists(self.address):
                raise Unavailable(f"the {self.name} embedder of this server is gone (no {self.address})")
            self._conn = bounded(lambda: Client(self.address, family="AF_UNIX", authkey=self._authkey), CONNECT_S)
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        seconds = deadline.for_embedder(self.timeout_s)
        with self._lock:
            try:
                conn = self._connection()
                conn.send((list(texts), kind))
                if not conn.poll(seconds):
                    raise TimeoutError(f"no answer within {seconds:.2f}s")
                state, value = conn.recv()
            except Unavailable:
                self._drop()
                raise
            except Exception as exc:  # refused, reset, EOF, timeout: the holder cannot answer now
                self._drop()
                raise Unavailable(
                    f"the {self.name} embedder of this server could not embed: {type(exc).__name__}: {exc}"
                ) from exc
        if state != "ok":
            raise Unavailable(str(value))
        return value

    def close(self) -> None:
        with self._lock:
            self._drop()


__all__ = ["EmbedServer", "SharedEmbedder", "worth_sharing"]
