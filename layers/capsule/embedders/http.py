"""A small JSON-over-HTTPS client for the embedding providers, on the standard library.

The providers' SDKs cost more than the call: ``voyageai`` brings about 85 MB (aiohttp,
langchain, ...) and over a second of imports to a cold Lambda, ``openai`` brings httpx and
anyio. An embedding call is one POST with a bearer key, so this client does only that:

- one kept-alive connection per thread (the TLS handshake is paid once per warm container,
  not once per call), reopened when the server or a failure closed it;
- a timeout on every connect and read, and ``retries`` more attempts with backoff on a
  connection failure, a timeout, 408, 409, 429 and 5xx (``Retry-After`` honoured up to the cap);
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
from dataclasses import dataclass
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_BACKOFF_S = 4.0
MAX_ERROR_TEXT = 300


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
    def parse(cls, url: str) -> "Endpoint":
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
    return min(0.5 * 2 ** attempt, MAX_BACKOFF_S)


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
    """POSTs JSON to one provider and returns the decoded JSON answer."""

    def __init__(self, base_url: str, api_key: str, *, timeout_s: float = 30.0, retries: int = 3,
                 sleep: Callable[[float], None] = time.sleep, ssl_context: ssl.SSLContext | None = None) -> None:
        self.endpoint = Endpoint.parse(base_url)
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                         "Accept": "application/json", "User-Agent": "capsule-memory"}
        self.timeout_s, self.retries, self._sleep = timeout_s, retries, sleep
        self._ssl = ssl_context
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._open()
            self._local.conn = conn
        return conn

    def _open(self) -> http.client.HTTPConnection:
        target, proxy = self.endpoint, _proxy_for(self.endpoint)
        via = proxy or target
        if target.scheme == "https":
            context = self._ssl or ssl.create_default_context()
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                via.host, via.port, timeout=self.timeout_s, context=context)
        else:
            conn = http.client.HTTPConnection(via.host, via.port, timeout=self.timeout_s)
        if proxy is not None:
            conn.set_tunnel(target.host, target.port)
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def post(self, path: str, payload: Mapping[str, Any]) -> Any:
        body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                status, headers, data = self._send(self.endpoint.base_path + path, body)
            except (OSError, http.client.HTTPException) as exc:  # refused, reset, timed out, TLS
                self.close()
                if last:
                    raise HttpError(f"no answer from {self.endpoint.host}: {type(exc).__name__}: {exc}") from exc
                self._sleep(backoff_s(attempt, None))
                continue
            if status < 300:
                try:
                    return json.loads(data)
                except ValueError as exc:
                    raise HttpError(f"{self.endpoint.host} answered {status} with no JSON", status) from exc
            if status not in RETRY_STATUSES or last:
                raise HttpError(f"{self.endpoint.host} answered {status}: {provider_message(data)}", status)
            self._sleep(backoff_s(attempt, headers.get("retry-after")))
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt

    def _send(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        """One exchange; a kept-alive connection the server closed while idle is reopened at
        once (that is no failure of the provider's, so it costs no attempt and no wait)."""
        reused = getattr(self._local, "conn", None) is not None
        try:
            return self._exchange(path, body)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if not reused:
                raise
            self.close()
            return self._exchange(path, body)

    def _exchange(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        conn = self._connection()
        conn.request("POST", path, body=body, headers=self._headers)
        response = conn.getresponse()
        data = response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
        if response.will_close:
            self.close()
        return response.status, headers, data


__all__ = ["Endpoint", "HttpError", "JsonClient", "backoff_s", "provider_message"]
