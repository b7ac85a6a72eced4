"""The local gateway: HTTP -> API Gateway HTTP API (payload v2) event -> the route's Lambda handler.

``capsule serve`` runs it. Like API Gateway it matches the route in :data:`functions.routes.ROUTES`,
authorizes the caller (:mod:`functions.auth`) and refuses a body over the limit before any handler
runs, then invokes the very handler the hosted API runs, with the verified identity in
``requestContext.authorizer``.

Handlers run in a pool of worker processes, each a warm "container" that builds the service
once and runs one invocation at a time — as Lambda does, and because the Powertools resolver
keeps the current event in class state, so one process must not run two at once. HTTP is
served by threads; the SQLite store serialises writers across processes.
"""

from __future__ import annotations

import base64
import json
import logging
import mimetypes
import multiprocessing
import os
import re
import signal
import socket
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

from capsule import limits
from capsule.config import Settings
from capsule.errors import CapsuleError, NotFound, PayloadTooLarge, Unavailable

from . import routes
from .auth import HttpRequest, authorize
from .credentials import Credentials

log = logging.getLogger("capsule.gateway")

CONSOLE_DIR = Path(__file__).parent / "console"
TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded", "application/xml")


# ---- routing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    route: routes.Route
    path_parameters: dict[str, str]


class Router:
    """Matches method and path against the route table; literal routes win over {params}."""

    def __init__(self, table: tuple[routes.Route, ...] = routes.ROUTES) -> None:
        compiled = []
        for route in table:
            pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(route.path))
            compiled.append((route.path.count("{"), re.compile(f"^{pattern}$"), route))
        self._routes = sorted(compiled, key=lambda item: item[0])

    def match(self, method: str, path: str) -> Match | None:
        for _, pattern, route in self._routes:
            found = pattern.match(path)
            if found and route.method == method:
                return Match(route, {k: unquote(v) for k, v in found.groupdict().items()})
        return None


# ---- events -------------------------------------------------------------------------------


def _is_text(content_type: str | None, body: bytes) -> bool:
    if content_type is None or content_type.startswith(TEXT_TYPES) or "json" in content_type:
        try:
            body.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False
    return False


def build_event(request: HttpRequest, match: Match, *, authorizer: dict[str, Any] | None, source_ip: str,
                request_id: str, now: datetime) -> dict[str, Any]:
    """The HTTP API payload v2 event API Gateway would send for this request."""
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in request.headers:
        name = name.lower()
        if name == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
        elif name != "authorization":  # API Gateway's authorizer consumes it
            headers[name] = f"{headers[name]},{value}" if name in headers else value
    query: dict[str, str] = {}
    for name, value in parse_qsl(request.raw_query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    route_key = f"{match.route.method} {match.route.path}"
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.raw_path,
        "rawQueryString": request.raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000", "apiId": "local", "domainName": headers.get("host", "localhost"),
            "domainPrefix": "local",
            "http": {"method": request.method, "path": request.raw_path, "protocol": "HTTP/1.1",
                     "sourceIp": source_ip, "userAgent": headers.get("user-agent", "")},
            "requestId": request_id, "routeKey": route_key, "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"), "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = query
    if match.path_parameters:
        event["pathParameters"] = match.path_parameters
    if authorizer is not None:
        event["requestContext"]["authorizer"] = authorizer
    if request.body:
        if _is_text(headers.get("content-type"), request.body):
            event["body"] = request.body.decode("utf-8")
        else:
            event["body"], event["isBase64Encoded"] = base64.b64encode(request.body).decode("ascii"), True
    return event


# ---- invoking handlers --------------------------------------------------------------------


class Invoker(Protocol):
    def invoke(self, handler: str, event: dict[str, Any]) -> dict[str, Any]: ...

    def close(self) -> None: ...


def _worker_start(settings: Settings) -> None:
    # The parent decides when to stop: a Ctrl-C reaches the whole process group, and a worker
    # killed by it would drop the request it is running.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no CloudWatch here; keep stdout quiet
    from capsule.runtime import build_service

    from . import app

    app.set_service(build_service(settings))


def _resolve(handler: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    import importlib

    module_name, _, attribute = handler.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def _worker_invoke(handler: str, event: dict[str, Any]) -> dict[str, Any]:
    from .app import LocalContext

    name = handler.split(":")[0].rsplit(".", 1)[-1]
    context = LocalContext(function_name=f"capsule-{name}", aws_request_id=event["requestContext"]["requestId"])
    return _resolve(handler)(event, context)


def _worker_warm() -> int:
    for route in routes.ROUTES:
        _resolve(route.handler)
    return os.getpid()


class ProcessPoolInvoker:
    """Warm worker processes, each building the service once (like Lambda containers)."""

    def __init__(self, settings: Settings, workers: int) -> None:
        self._pool = ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_start, initargs=(settings,),
        )
        self.workers = workers

    def warm(self) -> None:
        """Start every worker and import every handler now, not on the first request."""
        futures = [self._pool.submit(_worker_warm) for _ in range(self.workers)]
        for future in futures:
            future.result(timeout=300)

    def invoke(self, handler: str, event: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._pool.submit(_worker_invoke, handler, event).result()
        except BrokenProcessPool as exc:
            raise Unavailable("the handler worker stopped; restart capsule serve") from exc

    def close(self) -> None:
        self._pool.shutdown(wait=True)


# ---- the gateway --------------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    tenant: str = "-"
    request_id: str = "-"


def json_reply(status: int, payload: Any, **headers: str) -> Reply:
    return Reply(status, {"Content-Type": "application/json", **headers}, json.dumps(payload).encode("utf-8"))


def error_reply(exc: CapsuleError) -> Reply:
    return json_reply(exc.status, {"error": exc.to_dict()})


@dataclass
class Gateway:
    """Everything but the sockets: request in, reply out."""

    credentials: Credentials
    invoker: Invoker
    region: str = "us-east-1"
    console_dir: Path = CONSOLE_DIR
    clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
    router: Router = field(default_factory=Router)

    def handle(self, request: HttpRequest, source_ip: str) -> Reply:
        if request.method == "GET" and (request.raw_path == "/ui" or request.raw_path.startswith("/ui/")):
            return self.console(request.raw_path)
        match = self.router.match(request.method, request.raw_path)
        if match is None:
            return error_reply(NotFound(f"no route {request.method} {request.raw_path}"))
        request_id = uuid.uuid4().hex
        authorizer = None
        try:
            if match.route.auth:
                authorizer = authorize(request, bearers=self.credentials.bearers,
                                       sigv4_keys=self.credentials.sigv4_key, now=self.clock(), region=self.region)
            event = build_event(request, match, authorizer=authorizer, source_ip=source_ip,
                                request_id=request_id, now=self.clock())
            reply = self._reply(self.invoker.invoke(match.route.handler, event))
        except CapsuleError as exc:
            reply = error_reply(exc)
        reply.request_id, reply.tenant = request_id, _tenant_label(authorizer)
        reply.headers["x-request-id"] = request_id
        return reply

    @staticmethod
    def _reply(response: dict[str, Any]) -> Reply:
        body = response.get("body") or ""
        raw = base64.b64decode(body) if response.get("isBase64Encoded") else body.encode("utf-8")
        headers = {k: str(v) for k, v in (response.get("headers") or {}).items()}
        for name, values in (response.get("multiValueHeaders") or {}).items():
            headers[name] = ", ".join(values)
        return Reply(int(response.get("statusCode", 200)), headers, raw)

    def console(self, path: str) -> Reply:
        """The web console's static files (public: the page itself asks for the token)."""
        relative = unquote(path[len("/ui"):]).lstrip("/") or "index.html"
        root = self.console_dir.resolve()
        target = (root / relative).resolve()
        if root not in target.parents or not target.is_file():
            what = "the console is not installed" if not root.is_dir() else f"no console file {relative!r}"
            return error_reply(NotFound(what))
        kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind in ("application/javascript", "application/json"):
            kind += "; charset=utf-8"
        return Reply(200, {"Content-Type": kind, "Cache-Control": "no-cache"}, target.read_bytes())


def _tenant_label(authorizer: dict[str, Any] | None) -> str:
    if not authorizer:
        return "-"
    iam = authorizer.get("iam") or {}
    return iam.get("userArn") or (authorizer.get("lambda") or {}).get("tenant") or "-"


# ---- HTTP ---------------------------------------------------------------------------------


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
            self.close_connection = True  # the body is not read; the connection cannot be reused
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
