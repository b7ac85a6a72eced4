"""The warm route: ``capsule search``/``store`` and the hooks ask a running ``capsule serve``.

A fresh process that opens the store itself pays for numpy, pydantic, onnxruntime and the
embedding model before it reads one memory; a running server has them loaded. So
``capsule serve`` announces itself in its data folder (:data:`ANNOUNCE_FILE`: its URL, its
pid and the embedder and store it was asked for) and removes the file when it stops. A
command run on the same data folder, asking for the same embedder and store, posts its
request there with the server's token (tenant ``local``, the same the embedded commands
use). When no server is announced, or the one announced does not take the connection
within :data:`CONNECT_TIMEOUT_S` or does not know the token, the caller runs embedded as
before (:class:`NotAnswering`). ``CAPSULE_SERVER=off`` turns the route off.

This module loads nothing heavy: the standard library, :mod:`capsule.errors` and the route
table. Answers come back as :class:`View` objects, read by attribute like the library's
result models, so one renderer prints both.
"""

from __future__ import annotations

import http.client
import json
import os
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import quote, urlsplit

from capsule import errors
from capsule.paths import data_dir_from
from functions import routes
from functions.credentials import Credentials

ANNOUNCE_FILE = "serve.json"
SWITCH = "CAPSULE_SERVER"       # "off" (or 0/no/false): always run embedded
CONNECT_TIMEOUT_S = 0.05        # loopback answers in well under a millisecond, or refuses at once
REQUEST_TIMEOUT_S = 30.0        # once connected: as long as an embedded run could take

# status -> the library's error for it, from the error classes themselves (one place for the mapping)
_BY_STATUS: dict[int, type[errors.CapsuleError]] = {
    cls.status: cls for cls in (errors.InvalidInput, errors.MalformedBody, errors.UnsupportedMediaType,
                                errors.PayloadTooLarge, errors.Forbidden, errors.NotFound, errors.Conflict)
}


class NotAnswering(Exception):
    """No usable server for this data folder: the caller runs embedded instead."""


class View(dict):
    """A JSON object read by key or by attribute (``hit.components.vector``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True)
class LocalServer:
    url: str
    token: str

    def call(self, route: str, body: Any = None, *, path_params: Mapping[str, str] | None = None,
             timeout_s: float = REQUEST_TIMEOUT_S) -> View:
        """The answer of the route named ``route`` (:mod:`functions.routes`).

        Raises :class:`NotAnswering` before anything was sent (the caller may run embedded
        instead, nothing was done), the library's error for a 4xx, and Unavailable when the
        server failed or stopped answering after the request was sent.
        """
        entry = routes.by_name(route)
        path = entry.path.format(**{k: quote(v, safe="") for k, v in (path_params or {}).items()})
        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=CONNECT_TIMEOUT_S)
        try:
            try:
                conn.connect()
            except OSError as exc:
                raise NotAnswering(f"{self.url}: {exc}") from exc
            conn.sock.settimeout(timeout_s)
            payload = None if body is None else json.dumps(body, default=_jsonable).encode("utf-8")
            headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
            if payload is not None:
                headers["Content-Type"] = "application/json"
            try:
                conn.request(entry.method, path, body=payload, headers=headers)
                reply = conn.getresponse()
                status, data = reply.status, reply.read()
            except (OSError, http.client.HTTPException) as exc:
                raise errors.Unavailable(f"the capsule serve at {self.url} stopped answering: {exc}") from exc
        finally:
            conn.close()
        return _answer(status, data, self.url)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _answer(status: int, data: bytes, url: str) -> View:
    try:
        parsed = json.loads(data or b"{}", object_hook=View)
    except ValueError:
        parsed = View()
    if 200 <= status < 300:
        return parsed
    if status == 401:  # a server of another data folder (or a new token): not ours to use
        raise NotAnswering(f"{url} refused this data folder's token")
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = (error or {}).get("message") or f"the capsule serve at {url} answered {status}"
    details = (error or {}).get("details")
    raise _BY_STATUS.get(status, errors.Unavailable)(message, details=details)


def _off(environ: Mapping[str, str]) -> bool:
    return environ.get(SWITCH, "").strip().lower() in ("off", "0", "no", "false")


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def find(environ: Mapping[str, str], *, data_dir: str | Path | None = None,
         embedder: str | None = None) -> LocalServer | None:
    """The running server of this data folder that serves what an embedded run would open:
    the same store (SQLite) and the same embedder setting; else None."""
    if _off(environ):
        return None
    folder = data_dir_from(environ, data_dir).expanduser()
    try:
        announced = json.loads((folder / ANNOUNCE_FILE).read_text("utf-8"))
        token = Credentials(folder).token_path.read_text("utf-8").strip()
    except (OSError, ValueError):
        return None
    if not isinstance(announced, dict) or not token or not _alive(announced.get("pid")):
        return None
    wanted_embedder = embedder or environ.get("CAPSULE_EMBEDDER") or "auto"
    wanted_store = environ.get("CAPSULE_STORE") or "sqlite"
    if announced.get("embedder") != wanted_embedder or not announced.get("store") == wanted_store == "sqlite":
        return None
    if not isinstance(announced.get("url"), str):
        return None
    return LocalServer(announced["url"], token)


def announce(data_dir: Path, url: str, *, embedder: str, store: str,
             write: Callable[[Path, str], None]) -> Callable[[], None]:
    """Tell later commands where this server is; returns the function that takes it back
    (only while the file is still this process's: a newer server may have replaced it)."""
    path = data_dir / ANNOUNCE_FILE
    pid = os.getpid()
    write(path, json.dumps({"url": url, "pid": pid, "embedder": embedder, "store": store}))

    def withdraw() -> None:
        try:
            if json.loads(path.read_text("utf-8")).get("pid") == pid:
                path.unlink()
        except (OSError, ValueError, AttributeError):
            pass

    return withdraw




class ServerBackend:
    """The hooks' backend on the warm route: store, ingest and search through the server; from
    the first call the server does not take, the embedded backend ``fallback()`` opens."""

    name = "local-server"

    def __init__(self, server: LocalServer, fallback: Callable[[], Any]) -> None:
        self.server = server
        self._fallback = fallback
        self._embedded: Any = None

    def _call(self, operation: str, request: Mapping[str, Any]) -> Any:
        if self._embedded is None:
            try:
                return self.server.call(operation, dict(request))
            except NotAnswering:
                self._embedded = self._fallback()
        return getattr(self._embedded, operation)(request)

    def store(self, request: Mapping[str, Any]) -> Any:
        return self._call("store", request)

    def ingest(self, request: Mapping[str, Any]) -> Any:
        return self._call("ingest", request)

    def search(self, request: Mapping[str, Any]) -> Any:
        return self._call("search", request)

    def close(self) -> None:
        if self._embedded is not None:
            self._embedded.close()


__all__ = ["ANNOUNCE_FILE", "LocalServer", "NotAnswering", "ServerBackend", "View", "announce", "find"]
