"""The signing client's HTTP: kept-alive connections from one urllib3 pool, TLS sessions resumed.

Each call used to open its own connection (``urllib.request.urlopen``): against API Gateway a
TCP and a TLS handshake, tens to hundreds of milliseconds, on every tool call an agent makes.
A :class:`PooledTransport` keeps the connection open between calls (HTTP/1.1 keep-alive), and
when one must be opened again (the server closed an idle one) it resumes the last TLS session:
the same round trips, but no certificate sent, checked or signed for.

- One pool per transport, shared by every thread that calls (the MCP server calls from
  several): a call takes an idle connection, or opens its own while the others are busy; at
  most :data:`MAX_IDLE` stay open for the next calls.
- urllib3 retries nothing here (``retries=False``): the client's own policy decides, from
  which of the three failures happened (:class:`NotConnected`, :class:`Dropped`,
  :class:`TimedOut`), whether a request is safe to send again.
- A kept connection the server has closed is noticed before it is used (urllib3 polls it),
  so an idle drop costs a reconnect, not a failed call.
- Certificates are verified against the system's store (``SSL_CERT_FILE`` / ``SSL_CERT_DIR``
  honoured), like ``urlopen`` did; ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``NO_PROXY`` too.
"""

from __future__ import annotations

import ssl
import threading
import urllib.request
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_IDLE = 4  # connections kept open for the next calls (more only while calls overlap)


@dataclass
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes


class NotConnected(Exception):
    """The connection was never made: safe to retry any request."""


class Dropped(Exception):
    """Sent, then the connection closed before the answer: the server may have acted."""


class TimedOut(Exception):
    """Sent, but no answer in time: the server may have acted."""


class ResumingContext(ssl.SSLContext):
    """A client TLS context that offers the newest session it has seen to each new connection.

    Python resumes a session only when given one (``wrap_socket(session=)``), and urllib3
    never gives one; this context does. The session is read from the connections still open
    and from each connection as it closes (TLS 1.3 tickets arrive after the handshake, so
    the newest is taken as late as possible)."""

    def __init__(self, protocol: int = ssl.PROTOCOL_TLS_CLIENT) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._session: ssl.SSLSession | None = None
        self._open: weakref.WeakSet[ssl.SSLSocket] = weakref.WeakSet()
        self.sslsocket_class = _make_remembering(self)

    def __new__(cls, protocol: int = ssl.PROTOCOL_TLS_CLIENT) -> ResumingContext:
        return super().__new__(cls, protocol)

    def wrap_socket(self, sock, *args, session: ssl.SSLSession | None = None, **kwargs):  # type: ignore[override]
        tls = super().wrap_socket(sock, *args, session=session or self.latest_session(), **kwargs)
        with self._lock:
            self._open.add(tls)
        return tls

    def remember(self, tls: ssl.SSLSocket) -> None:
        session = _session_of(tls)
        if session is not None:
            with self._lock:
                self._session = session

    def latest_session(self) -> ssl.SSLSession | None:
        with self._lock:
            live = list(self._open)
        for tls in live:
            self.remember(tls)
        return self._session


def _session_of(tls: ssl.SSLSocket) -> ssl.SSLSession | None:
    try:
        session = tls.session
    except (ValueError, OSError):
        return None
    return session if session is not None and (session.has_ticket or session.id) else None


def _make_remembering(context: ResumingContext) -> type[ssl.SSLSocket]:
    remember = weakref.WeakMethod(context.remember)

    class RememberingSocket(ssl.SSLSocket):
        def close(self) -> None:  # while the TLS state still exists: its ticket resumes the next one
            method = remember()
            if method is not None:
                method(self)
            super().close()

    return RememberingSocket


def tls_context() -> ResumingContext:
    """Verifying like ``ssl.create_default_context()``: the system's CAs, hostname checked."""
    context = ResumingContext()
    context.load_default_certs()
    return context


def _proxy_for(url: str) -> str | None:
    """The proxy ``urlopen`` would have used for ``url`` (the environment's), or None."""
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy if "://" in proxy else "http://" + proxy


class PooledTransport:
    """``send(method, url, headers, body, timeout) -> Response`` over kept-alive connections."""

    def __init__(
        self,
        base_url: str,
        *,
        max_idle: int = MAX_IDLE,
        ssl_context: ssl.SSLContext | None = None,
        proxy: str | None = None,
    ) -> None:
        import urllib3  # here, not above: importing the client (a hook, the CLI) stays cheap

        self._urllib3 = urllib3
        # Only an https:// API needs one (loading the system's CAs costs milliseconds).
        self.tls = ssl_context or (tls_context() if base_url.startswith("https://") else None)
        proxy = proxy or _proxy_for(base_url)
        options = dict(num_pools=1, maxsize=max_idle, block=False, retries=False, ssl_context=self.tls)
        self._manager = urllib3.ProxyManager(proxy, **options) if proxy else urllib3.PoolManager(**options)

    def __call__(self, method: str, url: str, headers: Mapping[str, str], body: bytes, timeout: float) -> Response:
        from urllib3.exceptions import (
            ConnectTimeoutError,
            HTTPError,
            NewConnectionError,
            ProxyError,
            ReadTimeoutError,
            SSLError,
        )

        try:
            reply = self._manager.request(
                method,
                url,
                body=body if method in ("POST", "PUT", "PATCH") else None,
                headers=dict(headers),
                timeout=self._urllib3.Timeout(connect=timeout, read=timeout),
                redirect=False,
                preload_content=True,
            )
        except (NewConnectionError, ConnectTimeoutError, ProxyError) as exc:
            raise NotConnected(_reason(exc)) from exc
        except SSLError as exc:
            if _certificate_refused(exc):  # in the handshake, before anything was sent
                raise NotConnected(_reason(exc)) from exc
            raise Dropped(_reason(exc)) from exc  # a TLS failure later, perhaps mid-request
        except ReadTimeoutError as exc:
            raise TimedOut(_reason(exc)) from exc
        except (HTTPError, OSError) as exc:  # reset, closed mid-answer, a broken pipe
            raise Dropped(_reason(exc)) from exc
        return Response(reply.status, dict(reply.headers.items()), reply.data)

    def close(self) -> None:
        """Close the kept connections (the next call opens a new one)."""
        self._manager.clear()


def _certificate_refused(exc: Exception) -> bool:
    from urllib3.util.ssl_match_hostname import CertificateError

    cause = exc.args[0] if exc.args else None
    return isinstance(cause, (ssl.SSLCertVerificationError, CertificateError)) or isinstance(
        exc.__cause__, ssl.SSLCertVerificationError
    )


def _reason(exc: BaseException) -> str:
    """What went wrong, without urllib3's wrappers (its messages name a connection object)."""
    from urllib3.exceptions import NewConnectionError

    if isinstance(exc, NewConnectionError) and exc.__cause__ is not None:
        return str(exc.__cause__)  # "[Errno 111] Connection refused", as urlopen said
    if len(exc.args) > 1:  # ProtocolError("Connection aborted.", cause), ConnectTimeoutError(conn, message)
        last = exc.args[-1]
        return f"{exc.args[0]} {last}" if isinstance(last, BaseException) else str(last)
    return str(exc) or type(exc).__name__


__all__ = [
    "Dropped",
    "MAX_IDLE",
    "NotConnected",
    "PooledTransport",
    "ResumingContext",
    "Response",
    "TimedOut",
    "tls_context",
]
