"""The warm route: the commands the HTTP API serves and the hooks ask a running ``capsule serve``.

A fresh process that opens the store itself pays for numpy, pydantic, onnxruntime and the
embedding model before it reads one memory; a running server has them loaded. So
``capsule serve`` announces itself in its data folder (:data:`ANNOUNCE_FILE`: its URL, its
pid and the embedder and store it was asked for) and removes the file when it stops. A
command run on the same data folder, asking for the same embedder and store, posts its
request there with the server's token (tenant ``local``, the same the embedded commands
use). When no server is announced, or the one announced does not take the connection
within :data:`CONNECT_TIMEOUT_S` or does not know the token, the caller runs embedded as
before (:class:`NotAnswering`). ``CAPSULE_SERVER=off`` turns the route off.

This module loads nothing heavy: the standard library's :mod:`socket` and :mod:`json`, and
:mod:`capsule.core.errors`. The server announces the routes it serves and where its token is, so a
command reads neither the route table nor the credentials module (their imports cost more CPU
than the request); an announcement without them (an older server) loads both. The request
goes over a plain socket (:mod:`mcp_client.loopback_http`), not :mod:`http.client`. Answers
come back as :class:`View` objects, read by attribute like the library's result models, so
one renderer prints both.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

from capsule.core import errors
from capsule.core.paths import data_dir_from

from . import loopback_http

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing itself is a start-up cost the warm route does not pay
    from collections.abc import Callable, Mapping
    from typing import Any

ANNOUNCE_FILE = "serve.json"
SWITCH = "CAPSULE_SERVER"  # "off" (or 0/no/false): always run embedded
CONNECT_TIMEOUT_S = 0.05  # loopback answers in well under a millisecond, or refuses at once
REQUEST_TIMEOUT_S = 30.0  # once connected: as long as an embedded run could take
# A request the server ran as a job (202): polled from the first pause, each 1.5 times the last, up to the cap.
JOB_POLL_FIRST_S, JOB_POLL_CAP_S = 0.1, 2.0

# status -> the library's error for it, from the error classes themselves (one place for the mapping)
_BY_STATUS: dict[int, type[errors.CapsuleError]] = {
    cls.status: cls
    for cls in (
        errors.InvalidInput,
        errors.MalformedBody,
        errors.UnsupportedMediaType,
        errors.PayloadTooLarge,
        errors.Forbidden,
        errors.NotFound,
        errors.Conflict,
        errors.PreconditionFailed,
    )
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


class LocalServer:
    """A running server: its URL and token (what it is), and the routes it announced (what it
    serves: name -> (method, path); None for an older server, whose routes are looked up)."""

    __slots__ = ("url", "token", "routes")

    def __init__(self, url: str, token: str, routes: Mapping[str, Any] | None = None) -> None:
        self.url, self.token, self.routes = url, token, routes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalServer) and (self.url, self.token) == (other.url, other.token)

    def __hash__(self) -> int:
        return hash((self.url, self.token))

    def __repr__(self) -> str:
        return f"LocalServer(url={self.url!r})"

    def call(
        self,
        route: str,
        body: Any = None,
        *,
        path_params: Mapping[str, str] | None = None,
        query: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
        timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> View:
        """The answer of the route named ``route`` (:mod:`functions.routes`): ``body`` sent as
        JSON, or ``raw`` bytes as they are, declared as ``content_type`` (an import's JSON Lines).

        Raises :class:`NotAnswering` before anything was sent (the caller may run embedded
        instead, nothing was done), the library's error for a 4xx, and Unavailable when the
        server failed or stopped answering after the request was sent.
        """
        if raw is not None:
            headers = {**(headers or {}), "Content-Type": content_type}
        else:
            raw = None if body is None else json.dumps(body, default=_jsonable).encode("utf-8")
        status, _, data = self._send(route, raw, path_params, query, headers, timeout_s)
        answer = _answer(status, data, self.url)
        return self._await_job(answer) if status == 202 and isinstance(answer.get("id"), str) else answer

    def _await_job(self, accepted: View) -> View:
        """The result of a request the server ran as a job (functions.async_jobs: a long ingest or
        import), waited for here: a command has no gateway's 30 s to keep, and the job its own
        deadline. Raises the route's error when the job failed."""
        pause = JOB_POLL_FIRST_S
        while True:
            time.sleep(pause)
            job = self.call("job_get", path_params={"id": accepted["id"]})
            if job.get("status") == "succeeded":
                return job.get("result") or View()
            if job.get("status") == "failed":
                failed = json.dumps({"error": job.get("error") or {}}).encode()
                return _answer(int(job.get("status_code") or 500), failed, self.url)  # raises
            pause = min(pause * 1.5, JOB_POLL_CAP_S)

    def page(self, route: str, *, query: Mapping[str, Any], next_header: str, accept: str) -> tuple[bytes, str | None]:
        """One page of a route whose answer is text in pages (the export's JSON Lines): its body
        as sent, and the next page's cursor from the header ``next_header`` (None: the last page).
        Raises as :meth:`call` does."""
        status, fields, data = self._send(route, None, None, query, {"Accept": accept}, REQUEST_TIMEOUT_S)
        if not 200 <= status < 300:
            _answer(status, data, self.url)  # raises the error the server answered
        return data, fields.get(next_header.lower()) or None

    def _send(
        self,
        route: str,
        payload: bytes | None,
        path_params: Mapping[str, str] | None,
        query: Mapping[str, Any] | None,
        extra: Mapping[str, str] | None,
        timeout_s: float,
    ) -> tuple[int, dict[str, str], bytes]:
        method, template = _route(self.routes, route)
        path = template.format(**{k: quote(v, safe="") for k, v in (path_params or {}).items()})
        pairs = [
            (k, str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in (query or {}).items()
            if v is not None and v is not False
        ]
        if pairs:
            path += "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
        parts = urlsplit(self.url)
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        headers.update(extra or {})
        try:
            return loopback_http.round_trip(
                parts.hostname,
                parts.port,
                method,
                path,
                headers,
                payload,
                connect_timeout_s=CONNECT_TIMEOUT_S,
                timeout_s=timeout_s,
            )
        except loopback_http.ConnectFailed as exc:
            raise NotAnswering(f"{self.url}: {exc}") from exc
        except OSError as exc:
            raise errors.Unavailable(f"the capsule serve at {self.url} stopped answering: {exc}") from exc


def _route(announced: Mapping[str, Any] | None, name: str) -> tuple[str, str]:
    """(method, path) of a route: as the server announced it, else from the route table."""
    entry = (announced or {}).get(name)
    if isinstance(entry, list) and len(entry) == 2 and all(isinstance(v, str) for v in entry):
        return entry[0], entry[1]
    from functions import routes

    table = routes.by_name(name)
    return table.method, table.path


def served_routes() -> dict[str, list[str]]:
    """What :func:`announce` tells the commands: every route's method and path."""
    from functions import routes

    return {r.name: [r.method, r.path] for r in routes.ROUTES}


def _jsonable(value: Any) -> Any:
    from datetime import date  # a datetime is a date too; only a command given one gets here

    if isinstance(value, date):
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


def find(
    environ: Mapping[str, str], *, data_dir: str | Path | None = None, embedder: str | None = None
) -> LocalServer | None:
    """The running server of this data folder that serves what an embedded run would open:
    the same store (SQLite) and the same embedder setting; else None."""
    if _off(environ):
        return None
    folder = data_dir_from(environ, data_dir).expanduser()
    try:
        announced = json.loads((folder / ANNOUNCE_FILE).read_text("utf-8"))
        if not isinstance(announced, dict):
            return None
        token = _token_file(folder, announced.get("token_file")).read_text("utf-8").strip()
    except (OSError, ValueError):
        return None
    if not token or not _alive(announced.get("pid")):
        return None
    wanted_embedder = embedder or environ.get("CAPSULE_EMBEDDER") or "auto"
    wanted_store = environ.get("CAPSULE_STORE") or "sqlite"
    if announced.get("embedder") != wanted_embedder or not announced.get("store") == wanted_store == "sqlite":
        return None
    if not isinstance(announced.get("url"), str):
        return None
    routes = announced.get("routes")
    return LocalServer(announced["url"], token, routes if isinstance(routes, dict) else None)


def short_id(
    environ: Mapping[str, str], text: str, *, data_dir: str | Path | None = None, tenant: str = "local"
) -> str | None:
    """The whole id of the one memory whose id starts with ``text``, read from the SQLite file of
    this data folder (read-only, one indexed range), for a command that sends the id to the
    running server: the HTTP API takes whole ids, the CLI the 12 characters its tables print.
    None when this cannot say for sure (no such file, no match, several, a number that may be
    an imported Vector Bridge id, under 8 characters): the caller then resolves it as an
    embedded run does (capsule.core.idprefix), with its errors."""
    if len(text) < 8 or text.isdigit():
        return None
    import sqlite3

    path = data_dir_from(environ, data_dir).expanduser() / "capsule.db"
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=2.0)
        try:
            rows = db.execute(
                "SELECT id FROM memories WHERE +tenant = ? AND id >= ? AND id < ? ORDER BY id LIMIT 2",
                (tenant, text, text + "\U0010ffff"),
            ).fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    found = [row[0] for row in rows if isinstance(row[0], str) and row[0].startswith(text)]
    if text in found:
        return text
    return found[0] if len(found) == 1 else None


def _token_file(folder: Path, announced: Any) -> Path:
    """The server's token file: the one it announced when that is in its data folder (this
    one), else where the credentials module keeps it."""
    if isinstance(announced, str) and Path(announced).parent.resolve() == folder.resolve():
        return Path(announced)
    from functions.credentials import Credentials

    return Credentials(folder).token_path


def announce(
    data_dir: Path,
    url: str,
    *,
    embedder: str,
    store: str,
    token_file: Path | None = None,
    write: Callable[[Path, str], None],
) -> Callable[[], None]:
    """Tell later commands where this server is, what it serves and where its token is;
    returns the function that takes it back (only while the file is still this process's: a
    newer server may have replaced it)."""
    path = data_dir / ANNOUNCE_FILE
    pid = os.getpid()
    fields = {"url": url, "pid": pid, "embedder": embedder, "store": store, "routes": served_routes()}
    if token_file is not None:
        fields["token_file"] = str(token_file)
    write(path, json.dumps(fields))

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


__all__ = ["ANNOUNCE_FILE", "LocalServer", "NotAnswering", "ServerBackend", "View", "announce", "find", "short_id"]
