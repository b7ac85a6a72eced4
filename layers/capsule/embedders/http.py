"""A small JSON-over-HTTPS client for the embedding providers, on the standard library.

The providers' SDKs cost more than the call: ``voyageai`` brings about 85 MB (aiohttp,
langchain, ...) and over a second of imports to a cold Lambda, ``openai`` brings httpx and
anyio. An embedding call is one POST with a bearer key, so this client does only that:

- one kept-alive connection, shared by the threads that call (the TLS handshake is paid once
  per warm container, not once per call), reopened when the server or a failure closed it.
  A call takes the idle connection or, when another call holds it, opens its own: the
  embedders run each call in a fresh thread that the request may abandon at its deadline
  (``remote.bounded``), and a connection left mid-request must never carry the next call;
- a timeout on every connect and read, and ``retries`` more attempts with backoff on a
  connection failure, a timeout, 408, 409, 429 and 5xx (``Retry-After`` honoured up to the cap);
- ``post(..., timeout=)`` bounds the whole call, retries and waits included: each attempt
  waits at most what is left of it (and at most ``timeout_s``), and no attempt starts without
  :data:`MIN_ATTEMPT_S` left, so an abandoned call ends about when its caller stopped waiting;
- ``HTTPS_PROXY`` / ``NO_PROXY`` as the SDKs read them (a CONNECT tunnel through the proxy).

Errors raise :class:`HttpError` with the status and the provider's own message, never the key.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_BACKOFF_S = 4.0
MAX_ERROR_TEXT = 300
MAX_IDLE = 2  # kept-alive connections kept for the next calls (more only while calls overlap)
MIN_ATTEMPT_S = 0.05  # less than this left of a call's timeout: no further attempt


class HttpError(Exception):
    """The provider refused or could not answer; ``status`` is None when no answer came."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Endpoint:
    scheme: str
    host: str
    port: int
    base_path: str

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))


def backoff_s(attempt: int, retry_after: str | None) -> float:
    """Seconds to wait before attempt ``attempt + 1``: the server's ``Retry-After`` (seconds)
    when it gives one, else 0.5, 1, 2, ... both capped at :data:`MAX_BACKOFF_S`."""
    if retry_after:
        try:
            return min(max(float(retry_after), 0.0), MAX_BACKOFF_S)
        except ValueError:
            pass  # an HTTP date: use our own schedule
    return min(0.5 * 2**attempt, MAX_BACKOFF_S)


def provider_message(body: bytes) -> str:
    """The provider's error text: OpenAI's ``{"error": {"message"}}``, Voyage's ``{"detail"}``."""
    try:
        data = json.loads(body)
    except ValueError:
        return body[:MAX_ERROR_TEXT].decode("utf-8", "replace")
    if isinstance(data, dict):
        error = data.get("error")
        text = error.get("message") if isinstance(error, dict) else data.get("detail") or error
        if text:
            return str(text)[:MAX_ERROR_TEXT]
    return str(data)[:MAX_ERROR_TEXT]


def _proxy_for(endpoint: Endpoint) -> Endpoint | None:
    if urllib.request.proxy_bypass(endpoint.host):
        return None
    url = urllib.request.getproxies().get(endpoint.scheme)
    return Endpoint.parse(url) if url else None


class JsonClient:
    """POSTs JSON to one provider and returns the decoded JSON answer. Safe to share between threads."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout_s: float = 30.0,
        retries: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint = Endpoint.parse(base_url)
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "capsule-memory",
        }
        self.timeout_s, self.retries, self._sleep, self._clock = timeout_s, retries, sleep, clock
        self._ssl = ssl_context
        self._idle: list[http.client.HTTPConnection] = []  # connections no call is using
        self._lock = threading.Lock()

    def _take(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection (and True: reused), else a new one; no other call uses it until
        :meth:`_give` hands it back, so an abandoned call's connection is never shared."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            return self._open(timeout), False
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn, True

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def _open(self, timeout: float) -> http.client.HTTPConnection:
        target, proxy = self.endpoint, _proxy_for(self.endpoint)
        via = proxy or target
        if target.scheme == "https":
            context = self._ssl or ssl.create_default_context()
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                via.host, via.port, timeout=timeout, context=context
            )
        else:
            conn = http.client.HTTPConnection(via.host, via.port, timeout=timeout)
        if proxy is not None:
            conn.set_tunnel(target.host, target.port)
        return conn

    def close(self) -> None:
        """Closes the idle connections (one a call holds closes when that call ends)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def post(self, path: str, payload: Mapping[str, Any], *, timeout: float | None = None) -> Any:
        """The decoded answer; ``timeout`` (seconds) bounds the whole call, retries included."""
        body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        until = None if timeout is None else self._clock() + timeout
        for attempt in range(self.retries + 1):
            left = self._left(until)
            last = attempt == self.retries or left < MIN_ATTEMPT_S
            try:
                status, headers, data = self._send(self.endpoint.base_path + path, body, max(left, MIN_ATTEMPT_S))
            except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, TLS
                if last or not self._wait(backoff_s(attempt, None), until):
                    raise HttpError(f"no answer from {self.endpoint.host}: {type(exc).__name__}: {exc}") from exc
                continue
            if status < 300:
                try:
                    return json.loads(data)
                except ValueError as exc:
                    raise HttpError(f"{self.endpoint.host} answered {status} with no JSON", status) from exc
            if (
                status not in RETRY_STATUSES
                or last
                or not self._wait(backoff_s(attempt, headers.get("retry-after")), until)
            ):
                raise HttpError(f"{self.endpoint.host} answered {status}: {provider_message(data)}", status)
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt

    def _left(self, until: float | None) -> float:
        """The timeout of the next attempt: ``timeout_s``, or less when the call's end is nearer."""
        return self.timeout_s if until is None else min(self.timeout_s, until - self._clock())

    def _wait(self, seconds: float, until: float | None) -> bool:
        """Sleeps before the next attempt; False (no sleep) when the call's time would run out first."""
        if until is not None and self._clock() + seconds + MIN_ATTEMPT_S > until:
            return False
        self._sleep(seconds)
        return True

    def _send(self, path: str, body: bytes, timeout: float) -> tuple[int, dict[str, str], bytes]:
        """One exchange; a kept-alive connection the server closed while idle is reopened at
        once (that is no failure of the provider's, so it costs no attempt and no wait)."""
        conn, reused = self._take(timeout)
        try:
            return self._exchange(conn, path, body)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if not reused:
                raise
            return self._exchange(self._open(timeout), path, body)

    def _exchange(self, conn: http.client.HTTPConnection, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Hands the connection back only after a whole answer was read; on any failure it is closed."""
        try:
            conn.request("POST", path, body=body, headers=self._headers)
            response = conn.getresponse()
            data = response.read()
        except BaseException:
            conn.close()
            raise
        if response.will_close:
            conn.close()
        else:
            self._give(conn)
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data


__all__ = ["Endpoint", "HttpError", "JsonClient", "backoff_s", "provider_message"]
