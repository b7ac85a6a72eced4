"""The local gateway: HTTP request -> API Gateway HTTP API (payload v2) event -> the route's handler.

``capsule serve`` runs it. Like API Gateway it matches the route in :data:`functions.routes.ROUTES`,
authorizes the caller (:mod:`functions.auth`), then invokes the very Lambda handler the hosted API
runs with the verified identity in ``requestContext.authorizer``. This module has no sockets:
:mod:`functions.asgi` serves it over HTTP (uvicorn) in every :mod:`functions.workers` process.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import mimetypes
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote

from capsule.core.errors import CapsuleError, NotFound

from . import keys_api, routes, sync_status
from .auth import HttpRequest, authorize
from .credentials import Credentials

log = logging.getLogger("capsule.gateway")

CONSOLE_DIR = Path(__file__).parent / "console"
# API Gateway passes these on; here no credential reaches a handler or its logs.
SECRET_HEADERS = frozenset({"authorization", "x-api-key"})
TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded", "application/xml")


class Invoker(Protocol):
    """Runs a route's Lambda handler (functions.workers.LocalInvoker: in this process)."""

    def invoke(self, handler: str, event: dict[str, Any]) -> dict[str, Any]: ...

    def close(self) -> None: ...


# ---- routing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    route: routes.Route
    path_parameters: dict[str, str]


class Router:
    """Matches method and path against the route table; literal paths win over {params}."""

    def __init__(self, table: tuple[routes.Route, ...] = routes.ROUTES) -> None:
        compiled = []
        for route in table:
            pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(route.path))
            compiled.append((route.path.count("{"), re.compile(f"^{pattern}$"), route))
        self._routes = sorted(compiled, key=lambda item: item[0])
        # A literal path is its own resource (the most specific): found without a regex.
        self._literal: dict[str, dict[str, routes.Route]] = {}
        for route in table:
            if "{" not in route.path:
                self._literal.setdefault(route.path, {})[route.method] = route

    def _resource(self, path: str) -> list[tuple[re.Match[str], routes.Route]]:
        """The routes of the most specific path template that matches ``path``: the resource the
        OpenAPI document names (``/v1/memories/ingest`` is its own, not an ``{id}`` of ``/v1/memories``)."""
        found = [(params, pattern.match(path), route) for params, pattern, route in self._routes]
        found = [(params, m, route) for params, m, route in found if m]
        fewest = min((params for params, _, _ in found), default=None)
        return [(m, route) for params, m, route in found if params == fewest]

    def match(self, method: str, path: str) -> Match | None:
        literal = self._literal.get(path)
        if literal is not None:
            route = literal.get(method)
            return None if route is None else Match(route, {})
        for found, route in self._resource(path):
            if route.method == method:
                return Match(route, {k: unquote(v) for k, v in found.groupdict().items()})
        return None

    def allowed(self, path: str) -> list[str]:
        """The methods the resource at ``path`` serves (empty: no such path), HEAD wherever GET is."""
        methods = {route.method for _, route in self._resource(path)}
        if "GET" in methods:
            methods.add("HEAD")
        return sorted(methods)


# ---- events -------------------------------------------------------------------------------


def _text(content_type: str | None, body: bytes) -> str | None:
    """The body as text when API Gateway would pass it as text (a text type, valid UTF-8), else None."""
    if content_type is None or content_type.startswith(TEXT_TYPES) or "json" in content_type:
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


@functools.lru_cache(maxsize=4)
def _clock_text(second: int) -> str:
    """requestContext.time of a whole second (one strftime per second, not per request)."""
    return datetime.fromtimestamp(second, UTC).strftime("%d/%b/%Y:%H:%M:%S +0000")


def build_event(
    request: HttpRequest,
    match: Match,
    *,
    authorizer: dict[str, Any] | None,
    source_ip: str,
    request_id: str,
    now: datetime,
) -> dict[str, Any]:
    """The HTTP API payload v2 event API Gateway would send for this request."""
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in request.headers:
        name = name.lower()
        if name == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
        elif name not in SECRET_HEADERS:
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
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": headers.get("host", "localhost"),
            "domainPrefix": "local",
            "http": {
                "method": request.method,
                "path": request.raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": route_key,
            "stage": "$default",
            "time": _clock_text(int(now.timestamp())),
            "timeEpoch": int(now.timestamp() * 1000),
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
        text = _text(headers.get("content-type"), request.body)
        if text is not None:
            event["body"] = text
        else:
            event["body"], event["isBase64Encoded"] = base64.b64encode(request.body).decode("ascii"), True
    return event


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


def http_error(status: int, code: str, message: str, details: Any = None, **headers: str) -> Reply:
    """An error the gateway itself answers (framing, method, route), in the API's error shape."""
    return json_reply(status, {"error": {"code": code, "message": message, "details": details}}, **headers)


def method_not_allowed(method: str, path: str, allowed: list[str]) -> Reply:
    return http_error(
        405,
        "method_not_allowed",
        f"{path} does not take {method}; it takes {', '.join(allowed)}",
        {"allowed": allowed},
        Allow=", ".join(allowed),
    )


HEALTHZ = "/healthz"
CONSOLE_METHODS = ["GET", "HEAD"]


@dataclass
class Gateway:
    """Everything but the sockets: request in, reply out."""

    credentials: Credentials
    invoker: Invoker
    region: str = "us-east-1"
    console_dir: Path = CONSOLE_DIR
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    router: Router = field(default_factory=Router)

    def handle(self, request: HttpRequest, source_ip: str) -> Reply:
        method, path = request.method, request.raw_path
        local = self._local(method, path)
        if local is not None:
            return local
        if keys_api.owns(path) and not self.router.allowed(path):  # the route table's /v1/keys/rotate first
            return self._keys(request)
        if sync_status.owns(path) and not self.router.allowed(path):  # capsule sync's watermarks here
            return self._sync_status(request)
        # HEAD is GET without the body (the HTTP server drops it), as every HTTP server answers it.
        match = self.router.match("GET" if method == "HEAD" else method, path)
        if match is None:
            allowed = self.router.allowed(path)
            if allowed:
                return method_not_allowed(method, path, allowed)
            return error_reply(NotFound(f"no route {method} {path}"))
        request_id = uuid.uuid4().hex
        authorizer = None
        now = self.clock()
        try:
            if match.route.auth:
                authorizer = authorize(
                    request,
                    bearers=self.credentials.bearers,
                    sigv4_keys=self.credentials.sigv4_key,
                    now=now,
                    region=self.region,
                )
            as_handled = replace(request, method="GET") if request.method == "HEAD" else request
            event = build_event(
                as_handled, match, authorizer=authorizer, source_ip=source_ip, request_id=request_id, now=now
            )
            reply = self._reply(self.invoker.invoke(match.route.handler, event))
        except CapsuleError as exc:
            reply = error_reply(exc)
        reply.request_id, reply.tenant = request_id, _tenant_label(authorizer)
        reply.headers["x-request-id"] = request_id
        return reply

    def _local(self, method: str, path: str) -> Reply | None:
        """What the gateway answers itself, with no handler: liveness and the console."""
        if path == HEALTHZ:
            if method not in CONSOLE_METHODS:
                return method_not_allowed(method, path, CONSOLE_METHODS)
            # Liveness only, without credentials: this process answers HTTP. /v1/health is
            # the authenticated check that reaches the store.
            return json_reply(200, {"status": "ok"}, **{"Cache-Control": "no-store"})
        if path == "/ui" or path.startswith("/ui/"):
            if method not in CONSOLE_METHODS:
                return method_not_allowed(method, path, CONSOLE_METHODS)
            return self.console(path)
        return None

    def _keys(self, request: HttpRequest) -> Reply:
        """The API keys (functions.keys_api): the gateway's own, so answered here, not by a handler."""
        allowed = keys_api.methods(request.raw_path)
        if request.method not in allowed:
            return method_not_allowed(request.method, request.raw_path, allowed)
        return self._own(request, lambda who: keys_api.handle(request, self.credentials, who))

    def _sync_status(self, request: HttpRequest) -> Reply:
        """What capsule sync left in the data folder (functions.sync_status): local only, like the keys."""
        if request.method not in sync_status.METHODS:
            return method_not_allowed(request.method, request.raw_path, sync_status.METHODS)
        return self._own(request, lambda who: sync_status.handle(request, self.credentials.data_dir, who))

    def _own(self, request: HttpRequest, handle: Callable[[Callable[[], Any]], tuple[int, Any]]) -> Reply:
        """A route the gateway answers itself: ``handle`` gets the caller's authorization, to run
        when it needs it, and gives the status and payload."""
        try:
            status, payload = handle(
                lambda: authorize(
                    request,
                    bearers=self.credentials.bearers,
                    sigv4_keys=self.credentials.sigv4_key,
                    now=self.clock(),
                    region=self.region,
                )
            )
        except CapsuleError as exc:
            return error_reply(exc)
        return json_reply(status, payload, **{"Cache-Control": "no-store"})

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
        relative = unquote(path[len("/ui") :]).lstrip("/") or "index.html"
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
