"""The local gateway's HTTP server: threads for connections, keep-alive, clean shutdown.

Stopping (:func:`stop`) refuses new connections, lets every request in flight finish and
answer, closes idle keep-alive connections, then stops the handler workers.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from capsule import limits
from capsule.errors import PayloadTooLarge

from .auth import HttpRequest
from .gateway import Gateway, Reply, error_reply, json_reply

log = logging.getLogger("capsule.gateway")

DRAIN_LIMIT = 16 * limits.MAX_BODY_BYTES  # refused bodies up to this are read, not reset


class RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse connections
    server: "GatewayServer"
    timeout = 30  # an idle keep-alive connection is closed after this many seconds

    def setup(self) -> None:
        super().setup()
        self.busy = False
        self.server.track(self, True)

    def finish(self) -> None:
        self.server.track(self, False)
        super().finish()

    def parse_request(self) -> bool:
        self.busy = True  # the request line is in: from here on, shutdown lets it finish
        return super().parse_request()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        finally:
            self.busy = False
            if self.server.closing.is_set():
                self.close_connection = True

    def _serve(self) -> None:
        started = time.perf_counter()
        if self.server.closing.is_set():
            self.close_connection = True
        reply = self._reply()
        self._send(reply)
        elapsed = (time.perf_counter() - started) * 1000
        log.info('%s "%s %s" %d %d %.1fms tenant=%s request=%s', self.client_address[0], self.command,
                 self.path, reply.status, len(reply.body), elapsed, reply.tenant, reply.request_id)

    def _reply(self) -> Reply:
        length = self.headers.get("content-length")
        if self.headers.get("transfer-encoding"):
            self.close_connection = True
            return json_reply(411, {"error": {"code": "length_required",
                                              "message": "send a Content-Length; chunked bodies are not accepted",
                                              "details": None}})
        try:
            size = int(length or 0)
        except ValueError:
            size = -1
        if size < 0 or size > limits.MAX_BODY_BYTES:
            self._discard(size)
            return error_reply(PayloadTooLarge(
                f"the body is {length} bytes; the limit is {limits.MAX_BODY_BYTES} bytes", field="body"))
        body = self.rfile.read(size) if size else b""
        if len(body) != size:
            self.close_connection = True
            return json_reply(400, {"error": {"code": "incomplete_body", "details": None,
                                              "message": f"got {len(body)} of {size} body bytes"}})
        parts = urlsplit(self.path)
        request = HttpRequest(method=self.command, raw_path=parts.path or "/", raw_query=parts.query,
                              headers=list(self.headers.items()), body=body)
        try:
            return self.server.gateway.handle(request, self.client_address[0])
        except Exception:  # never a stack trace to the caller; the log has it
            log.exception("gateway failure")
            return json_reply(500, {"error": {"code": "internal", "message": "internal error", "details": None}})

    def _discard(self, size: int) -> None:
        """Read and drop a refused body, so the client sees the answer rather than a reset;
        a body too large even to drain closes the connection instead."""
        if 0 < size <= DRAIN_LIMIT:
            while size > 0:
                chunk = self.rfile.read(min(size, 65536))
                if not chunk:
                    break
                size -= len(chunk)
        self.close_connection = True

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug(format, *args)


class GatewayServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True  # server_close() waits for requests in flight
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], gateway: Gateway) -> None:
        self.gateway = gateway
        self.closing = threading.Event()
        self._open: set[RequestHandler] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, RequestHandler)

    def track(self, handler: RequestHandler, is_open: bool) -> None:
        with self._open_lock:
            (self._open.add if is_open else self._open.discard)(handler)

    def close_idle(self) -> None:
        """Wake connections waiting for a next request so they close; busy ones finish first."""
        self.closing.set()
        with self._open_lock:
            idle = [h for h in self._open if not h.busy]
        for handler in idle:
            try:
                handler.connection.shutdown(socket.SHUT_RD)
            except OSError:
                pass


def start(gateway: Gateway, host: str = "127.0.0.1", port: int = 8787) -> tuple[GatewayServer, threading.Thread]:
    server = GatewayServer((host, port), gateway)
    thread = threading.Thread(target=server.serve_forever, name="gateway", daemon=True)
    thread.start()
    return server, thread


def stop(server: GatewayServer, thread: threading.Thread) -> None:
    """Stop accepting, let every request in flight finish and answer, then close."""
    server.closing.set()       # answers from now on close their connection
    server.shutdown()          # no new connections
    thread.join()
    server.close_idle()
    server.server_close()      # joins the request threads (block_on_close)
    server.gateway.invoker.close()
