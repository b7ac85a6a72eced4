"""The local gateway as an ASGI application, which uvicorn serves in every handler worker.

uvicorn (httptools) reads and writes HTTP: keep-alive, TCP_NODELAY, pipelining, slow clients
on an event loop. This module turns one request into an :class:`HttpRequest`, reads its body
within the limit, and runs :meth:`Gateway.handle` on the event loop's thread, so a worker runs
one invocation at a time, as a Lambda container does. Every answer, framing errors
included, is JSON in the API's error shape.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any, Awaitable, Callable

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from capsule import limits

from .auth import HttpRequest
from .gateway import Gateway, Reply, http_error

log = logging.getLogger("capsule.gateway")

DRAIN_LIMIT = 16 * limits.MAX_BODY_BYTES  # refused bodies up to this are read, so the client sees the answer
BODY_IDLE_S = 30.0  # a body that sends nothing for this long is refused (408): a stalled client holds no worker
POLL_S = 0.5        # how often a request still receiving its body checks whether the worker is stopping

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


MAX_HEAD_BYTES = 64 * 1024  # request line and headers; past this the request is refused (431)
REASONS = {400: "Bad Request", 431: "Request Header Fields Too Large"}


def framing_error(status: int, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 answer for a request that cannot be parsed (then the connection closes)."""
    body = http_error(status, code, message).body
    head = (f"HTTP/1.1 {status} {REASONS[status]}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode("ascii") + body


class PairedWrites:
    """A connection's transport that sends two consecutive writes as one.

    uvicorn writes an answer's head and its body apart: on a connection without Nagle that is
    two packets, two system calls here and two wake-ups of the client, which reads the head,
    then waits for the body. The first write is held until the second joins it, and never past
    the current turn of the event loop (anything that writes once is sent then, or on close)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport, self._loop = transport, loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        if self._held is None:
            self._held = bytes(data)
            self._loop.call_soon(self.flush)
            return
        held, self._held = self._held, None
        self._transport.write(held + data)

    def flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:  # everything else is the transport's own
        return getattr(self._transport, name)


class JsonErrorsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, answering unparseable requests (a Content-Length of -5 or
    abc, a broken request line or header) in JSON instead of plain text, and refusing a request
    line and headers over :data:`MAX_HEAD_BYTES` (the parser itself sets no bound)."""

    head_bytes: int | None = 0  # bytes of the current request's head so far; None once it is in

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # Answers go out as they are written (headers, then body): never held for an ACK.
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(PairedWrites(transport, asyncio.get_running_loop()))  # type: ignore[arg-type]
    began = False               # a request began in the data being parsed

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.head_bytes, self.began = 0, True

    def on_headers_complete(self) -> None:
        self.head_bytes = None
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        self.began = False
        super().data_received(data)
        # Counted after parsing, so a chunk that completes a head is not. A chunk in which a
        # head began may also hold the end of the request before it (pipelining): it counts,
        # but only a later chunk can cross the bound, so the bound holds to within one read.
        if self.head_bytes is not None and not self.transport.is_closing():
            self.head_bytes += len(data)
            if self.head_bytes > MAX_HEAD_BYTES + (len(data) if self.began else 0):
                self._refuse(431, "headers_too_large",
                             f"the request line and headers are over {MAX_HEAD_BYTES} bytes")

    def send_400_response(self, msg: str) -> None:
        self._refuse(400, "bad_request", "malformed HTTP request: check the request line, the headers "
                                         "and Content-Length (one whole number of bytes)")

    def _refuse(self, status: int, code: str, message: str) -> None:
        if not self.transport.is_closing():
            self.transport.write(framing_error(status, code, message))
            self.transport.close()


def _content_length(headers: list[tuple[str, str]]) -> tuple[int | None, str | None]:
    """The declared body length, or the reason it is malformed (the parser refuses most first)."""
    values = [v.strip() for k, v in headers if k == "content-length"]
    if not values:
        return None, None
    if len(set(values)) > 1 or not values[0].isdigit() or not values[0].isascii():
        return None, f"Content-Length must be one non-negative whole number, got {', '.join(values)!r}"
    return int(values[0]), None


def _received(receive: Receive) -> bool:
    """Whether uvicorn already holds the next message for ``receive`` (its cycle's event is set:
    ``receive`` returns it without waiting). False for any other server: it waits with a timeout."""
    ready = getattr(getattr(receive, "__self__", None), "message_event", None)
    return isinstance(ready, asyncio.Event) and ready.is_set()


class GatewayApp:
    """ASGI 3 application: HTTP request -> :class:`Gateway` -> HTTP response."""

    def __init__(self, gateway: Gateway, access: Callable[[str], None] | None = None) -> None:
        self.gateway = gateway
        # Where each request's access line goes: the gateway's logger unless told (a worker
        # passes functions.accesslog's writer, the same line on stderr for less CPU).
        self.access = access or (lambda line: log.info("%s", line))
        # Set by the worker: true once it drains. A request still receiving its body then gets a
        # 503 at once instead of holding the shutdown until its client finishes sending.
        self.stopping: Callable[[], bool] = lambda: False

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # served with lifespan off and no websockets
        started = time.perf_counter()
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        body, refusal = await self._body(headers, receive)
        if body is None and refusal is None:
            return  # the client went away
        request = HttpRequest(method=scope["method"], raw_path=scope["raw_path"].decode("latin-1") or "/",
                              raw_query=scope["query_string"].decode("latin-1"), headers=headers, body=body or b"")
        client = (scope.get("client") or ("-", 0))[0]
        reply = refusal or self._handle(request, client)
        await self._send(send, reply, close=refusal is not None)
        self.access(f'{client} "{request.method} {request.raw_path}" {reply.status} {len(reply.body)} '
                    f'{(time.perf_counter() - started) * 1000:.1f}ms tenant={reply.tenant} request={reply.request_id}')

    def _handle(self, request: HttpRequest, client: str) -> Reply:
        """Run the invocation on the event loop's own thread: one at a time in this worker, as
        in a Lambda container (the Powertools resolver keeps the current event in class state).
        Requests on other connections wait for it as they would for a separate invocation
        thread, and a worker that is busy accepts no new connection, so an idle one takes it.
        Measured against a one-thread executor: 10-15% less CPU per request and a lower p50."""
        try:
            return self.gateway.handle(request, client)
        except Exception:  # never a stack trace to the caller; the log has it
            log.exception("gateway failure")
            return http_error(500, "internal", "internal error")

    async def _body(self, headers: list[tuple[str, str]], receive: Receive) -> tuple[bytes | None, Reply | None]:
        """The whole body, or a refusal (after reading what is cheap to read, so the client,
        still sending, reads the answer instead of a reset). (None, None): the client left."""
        declared, malformed = _content_length(headers)
        if malformed:
            return b"", http_error(400, "bad_request", malformed, [{"field": "Content-Length", "message": malformed}])
        limit = limits.MAX_BODY_BYTES
        if declared is not None and declared > DRAIN_LIMIT:
            return b"", self._too_large(declared)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self._next(receive)
            if isinstance(message, Reply):
                return b"", message
            if message["type"] == "http.disconnect":
                return None, None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= limit and (declared is None or declared <= limit):
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
            if size > DRAIN_LIMIT:
                break
        if size > limit or (declared is not None and declared > limit):
            return b"", self._too_large(declared if declared is not None else size)
        return b"".join(chunks), None

    async def _next(self, receive: Receive) -> dict[str, Any] | Reply:
        """The next body message, or the refusal for a client that stalls or a worker that stops.
        (A timeout, not a task per message: uvicorn's receive is safe to cancel and call again.)"""
        if _received(receive):  # the usual case, a body in one read: no timer to arm and cancel
            return await receive()
        waited = 0.0
        while True:
            try:
                async with asyncio.timeout(POLL_S):
                    return await receive()
            except TimeoutError:
                waited += POLL_S
            if self.stopping() or waited >= BODY_IDLE_S:
                if self.stopping():
                    return http_error(503, "unavailable", "the server is stopping; send the request again",
                                      **{"Retry-After": "1"})
                return http_error(408, "request_timeout", f"no body bytes for {BODY_IDLE_S:.0f}s; send it again")

    @staticmethod
    def _too_large(size: int) -> Reply:
        limit = limits.MAX_BODY_BYTES
        return http_error(413, "payload_too_large", f"the body is {size} bytes or more; the limit is {limit} bytes",
                          [{"field": "body", "message": f"the limit is {limit} bytes"}])

    @staticmethod
    async def _send(send: Send, reply: Reply, *, close: bool) -> None:
        headers = [(k.lower().encode("latin-1"), str(v).encode("latin-1", "replace")) for k, v in reply.headers.items()
                   if k.lower() not in ("content-length", "connection", "transfer-encoding")]
        body = b"" if reply.status in (204, 304) else reply.body
        if body or reply.status not in (204, 304):
            headers.append((b"content-length", str(len(body)).encode("ascii")))
        if close:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
