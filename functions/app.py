"""What every Lambda handler shares: the service, the tenant, errors, logging and metrics.

A handler module defines one endpoint function and one :class:`Endpoint`, then
``handler = make_handler(ENDPOINT)``. ``make_handler`` builds a Powertools
``APIGatewayHttpResolver`` (payload v2, pydantic validation) holding that one route,
maps :mod:`capsule.core.errors` to HTTP statuses (the only place that happens), checks the
caller's identity and the body size before anything is parsed, and wraps the handler
with a correlation-id logger and an EMF metric per operation.

The service is built once per container (a warm Lambda, a gateway worker) and reused;
tests inject their own with :func:`set_service`.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import json
import re
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    ResponseValidationError,
    ValidationException,
)
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.shared.json_encoder import Encoder
from pydantic import BaseModel
from pydantic_core import to_json

from capsule import authz
from capsule.core import deadline, limits, wire
from capsule.core.errors import (
    CapsuleError,
    InvalidInput,
    MalformedBody,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
    UnsupportedMediaType,
)
from capsule.core.fielderrors import invalid_input
from capsule.core.models import ErrorResponse
from capsule.runtime.service import build_service
from capsule.service.memory_service import MemoryService

from . import async_jobs, byok, idempotency, metering, query_names, routes, scopes
from . import body as bodies
from .body import body_text
from .body import parse as parse_body
from .secrets import load_settings, secret_arn
from .secrets import max_age as secret_max_age
from .shortcut import Shortcut, replaying
from .tenancy import tenant_of

SERVICE_NAME = "capsule-memory"
NAMESPACE = "CapsuleMemory"

logger = Logger(service=SERVICE_NAME)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE_NAME)

# ---- the service, once per container ----------------------------------------

_service: MemoryService | None = None


@dataclass
class _FromSecret:
    """The secret's values a service was built with (as a digest) and when they were last checked."""

    digest: str
    checked: float


_from_secret: _FromSecret | None = None  # None: not built from the deployment's secret


def set_service(service: MemoryService | None) -> None:
    """Use ``service`` for every handler of this process (None: build from the environment)."""
    global _service, _from_secret
    metering.release(logger.warning)  # the counts buffered for the service being replaced
    _service, _from_secret = service, None


def service() -> MemoryService:
    global _from_secret
    if _service is None:
        # The environment, plus the deployment's secret when CAPSULE_SECRET_ARN names one.
        settings = load_settings()
        set_service(build_service(settings))
        if secret_arn():
            _from_secret = _FromSecret(_secret_digest(settings), time.monotonic())
    elif _from_secret is not None and time.monotonic() - _from_secret.checked >= secret_max_age():
        _refresh_from_secret(_from_secret)
    assert _service is not None
    return _service


def _refresh_from_secret(built: _FromSecret) -> None:
    """A warm container reads the secret again once Powertools' copy has aged out, and builds its
    service anew when a value changed (a rotated MongoDB password or provider key): otherwise a
    rotated secret would be seen only by containers started after it. When Secrets Manager cannot
    answer, the service in hand goes on serving and the next check is a max age later."""
    global _from_secret
    built.checked = time.monotonic()
    try:
        settings = load_settings()
    except CapsuleError as exc:
        logger.warning("the deployment's secret could not be read again; keeping the settings in use", error=str(exc))
        return
    digest = _secret_digest(settings)
    if digest != built.digest:
        logger.info("the deployment's secret changed; building the service with its new values")
        set_service(build_service(settings))
        _from_secret = _FromSecret(digest, built.checked)


def _secret_digest(settings: Any) -> str:
    values = (settings.mongodb_uri, settings.voyage_api_key, settings.openai_api_key)
    joined = "\x00".join(v.get_secret_value() if v is not None else "" for v in values)
    return hashlib.sha256(joined.encode()).hexdigest()


# ---- the caller ---------------------------------------------------------------

_tenant: contextvars.ContextVar[str] = contextvars.ContextVar("capsule_tenant")


def tenant() -> str:
    """The tenant of the request being handled (set from its verified identity)."""
    return _tenant.get()


def reach():
    """What the caller of the request being handled may see and do (functions.scopes)."""
    return scopes.current()


def narrowed() -> dict[str, Any]:
    """``reach=`` for a service call that narrows what it returns, only when the caller is limited
    (a full-access call stays the call it always was)."""
    current = scopes.current()
    return {} if current is scopes.FULL else {"reach": current}


# ---- errors -------------------------------------------------------------------

_ERROR_DESCRIPTIONS = {
    400: "The body is not UTF-8 text",
    401: "Missing or bad credentials",
    403: "Credentials not accepted (e.g. a SigV4 signature mismatch), or the key's scope does not reach what the "
    "request needs (details name what is missing; x-capsule-scope says what each route needs)",
    404: "No such memory for this caller (another tenant's id is also not found)",
    409: "The memory's state does not allow it; or (code idempotency_in_progress, with Retry-After) a request "
    "with the same Idempotency-Key is still running",
    412: "If-Match does not match: the memory changed since it was read (nothing was changed)",
    413: "Body over the limit; or (code response_too_large) the answer would pass Lambda's 6 MB: details "
    "name what to reduce",
    415: "The body is not declared as application/json in UTF-8 (Content-Type, required with a body), or is "
    "sent encoded (Content-Encoding other than identity)",
    422: "Invalid input; details name each field",
    429: "The tenant's rate limit (requests a minute) is reached; nothing was done; retry after Retry-After seconds",
    503: "A dependency (the store) is unavailable or full; nothing was changed; retry after Retry-After seconds",
    500: "Unexpected error; nothing about it is revealed",
}


_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before retrying",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    }
}


def error_responses(*statuses: int) -> dict[int, dict[str, Any]]:
    """OpenAPI ``responses`` entries for error statuses, all with the one error schema."""
    return {
        status: {
            "description": _ERROR_DESCRIPTIONS[status],
            "content": {"application/json": {"model": ErrorResponse}},
            **({"headers": _RETRY_AFTER} if status in (429, 503) else {}),
        }
        for status in statuses
    }


def _headers(exc: CapsuleError) -> dict[str, str]:
    retry_after = getattr(exc, "retry_after_s", None)  # Unavailable, idempotency.InProgress
    return {"Retry-After": str(retry_after)} if retry_after is not None else {}


def error_response(exc: CapsuleError) -> Response:
    return Response(
        status_code=exc.status,
        content_type=content_types.APPLICATION_JSON,
        body={"error": exc.to_dict()},
        headers=_headers(exc),
    )


def validation_error(exc: ValidationException, body_model: type[BaseModel] | None = None) -> InvalidInput:
    errors = list(exc.errors())
    if errors and errors[0].get("type") == "json_invalid":
        return InvalidInput(
            "body: body is not valid JSON",
            field="body",
            details=[{"field": "body", "message": "body is not valid JSON", "type": "json_invalid"}],
        )
    # Powertools reports ("body", "content") or ("query", "limit"): name the field itself.
    in_body = [{**e, "loc": tuple(e.get("loc", ()))[1:]} for e in errors if _where(e) == "body"]
    elsewhere = [{**e, "loc": tuple(e.get("loc", ()))[1:]} if _where(e) else e for e in errors if _where(e) != "body"]
    return invalid_input([*in_body, *elsewhere], body_model) if (in_body or elsewhere) else invalid_input([])


def _where(err: dict[str, Any]) -> str | None:
    loc = tuple(err.get("loc", ()))
    return str(loc[0]) if len(loc) > 1 and loc[0] in ("body", "query", "path", "header") else None


def _install_error_handlers(app: APIGatewayHttpResolver, body_model: type[BaseModel] | None = None) -> None:
    @app.exception_handler(CapsuleError)
    def _ours(exc: CapsuleError) -> Response:
        if exc.status >= 500:
            logger.warning("request failed", extra={"code": exc.code, "error": exc.message})
        return error_response(exc)

    @app.exception_handler(ValidationException)
    def _invalid(exc: ValidationException) -> Response:
        if isinstance(exc, ResponseValidationError):  # our bug, not the caller's
            logger.error("response failed its own schema", extra={"errors": str(exc.errors())[:2000]})
            return error_response(CapsuleError("internal error; the response did not match its schema"))
        if isinstance(exc, RequestUnsupportedContentType):
            return error_response(UnsupportedMediaType("send the body as application/json", field="content-type"))
        return error_response(validation_error(exc, body_model))

    @app.not_found
    def _no_route(exc: NotFoundError) -> Response:
        return error_response(NotFound("no such route"))

    @app.exception_handler(Exception)
    def _unexpected(exc: Exception) -> Response:
        # Logged with its stack for us; the caller learns nothing about the internals.
        logger.exception("unexpected error")
        return error_response(CapsuleError("internal error; the request id is in the logs"))


# ---- endpoints and handlers ---------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """One route's function and the OpenAPI facts that the type hints do not carry."""

    route: str  # the name in routes.ROUTES
    function: Callable[..., Any]
    summary: str
    status_code: int = 200
    errors: tuple[int, ...] = (401, 413, 422, 500, 503)
    extra: dict[str, Any] = field(default_factory=dict)


def powertools_path(path: str) -> str:
    """``/v1/memories/{id}`` (API Gateway) -> ``/v1/memories/<id>`` (Powertools)."""
    return re.sub(r"\{(\w+)\}", r"<\1>", path)


def _responses(endpoint: Endpoint) -> dict[int, dict[str, Any]]:
    # Powertools documents only the responses given once any are: name the success one too.
    returns = typing.get_type_hints(endpoint.function)["return"]
    success = {endpoint.status_code: {"description": "Success", "content": {"application/json": {"model": returns}}}}
    auth = routes.by_name(endpoint.route).auth
    errors = sorted(
        {
            *endpoint.errors,
            *((400, 415) if body_model(endpoint) else ()),
            *((403,) if auth else ()),
            *((409, 422) if endpoint.route in idempotency.ROUTES else ()),
            *((429,) if auth and endpoint.route not in metering.EXEMPT else ()),
        }
    )
    return {**success, **error_responses(*errors)}


def _tag(path: str) -> str:
    for group in ("memories", "solutions", "patterns"):
        if f"/{group}" in path:
            return group
    return "service"


def register(app: APIGatewayHttpResolver, endpoint: Endpoint, function: Callable[..., Any] | None = None) -> None:
    """Add the endpoint's route to ``app``, served by ``function`` (default: the endpoint's own)."""
    route = routes.by_name(endpoint.route)
    needed = scopes.route_scope(route.name)[0]
    app.route(
        powertools_path(route.path),
        route.method,
        summary=endpoint.summary,
        operation_id=route.name,
        status_code=endpoint.status_code,
        responses=_responses(endpoint),
        tags=[_tag(route.path)],
        security=[{"bearer": [needed]}, {"sigv4": [needed]}] if route.auth else [],
        openapi_extensions={"x-capsule-scope": scopes.openapi_scope(route.name)} if route.auth else None,
        **endpoint.extra,
    )(function or endpoint.function)


class _Resolver(APIGatewayHttpResolver):
    """Powertools takes path parameters from the raw path: ``/v1/memories/caf%C3%A9`` names the
    id ``café``, as API Gateway's own ``pathParameters`` say (and the id's length is its own)."""

    def _convert_matches_into_route_keys(self, match: re.Match) -> dict[str, str]:
        return {key: unquote(value) for key, value in match.groupdict().items()}


_ENCODER = Encoder()


def json_text(payload: Any) -> str:
    """The resolvers' JSON serializer: pydantic-core's, a third of ``json.dumps``'s CPU for a
    search's answer (46 against 145 us for eight hits), compact like Powertools' own. Text is
    written as UTF-8, not escaped; NaN and infinities as null (``json.dumps`` writes ``NaN``,
    which is not JSON); what it does not know goes to Powertools' encoder."""
    return to_json(payload, fallback=_ENCODER.default).decode("utf-8")


def new_resolver(body_model: type[BaseModel] | None = None) -> APIGatewayHttpResolver:
    # The resolver reads the body the admission check parsed (functions.body.loads), not a second parse.
    app = _Resolver(enable_validation=True, serializer=json_text, json_body_deserializer=bodies.loads)
    _install_error_handlers(app, body_model)
    return app


def body_model(endpoint: Endpoint) -> type[BaseModel] | None:
    """The model of the endpoint's JSON body, None when it takes none."""
    hints = typing.get_type_hints(endpoint.function, include_extras=True)
    for name, hint in hints.items():
        if name != "return" and any(isinstance(m, Body) for m in getattr(hint, "__metadata__", ())):
            model = typing.get_args(hint)[0]
            return model if isinstance(model, type) and issubclass(model, BaseModel) else None
    return None


def body_size(event: dict[str, Any]) -> int:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return len(body) * 3 // 4
    return len(body.encode("utf-8", "surrogatepass"))


JSON_TYPE = "application/json; charset=utf-8"


def content_encoding(event: dict[str, Any]) -> UnsupportedMediaType | None:
    """Any body sent encoded (gzip, br, ...) is refused: it would be read as the text it is not."""
    if not event.get("body"):
        return None
    encoding = next((str(v) for k, v in (event.get("headers") or {}).items() if k.lower() == "content-encoding"), "")
    encoding = encoding.strip().lower()
    if not encoding or encoding == "identity":
        return None
    return UnsupportedMediaType(
        f"the body is sent with Content-Encoding {encoding!r}; send it unencoded (identity)", field="content-encoding"
    )


def json_media_type(event: dict[str, Any]) -> UnsupportedMediaType | None:
    """A JSON route takes a body declared as JSON in UTF-8 and sent as it is, nothing else: a body
    without a Content-Type, or with another type (Powertools would parse a form or a multipart
    body), another charset (UTF-16 read as UTF-8) or a Content-Encoding (a gzip body read as
    text) is refused, naming the header. A request without a body needs neither."""
    if not event.get("body"):
        return None
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    encoded = content_encoding(event)
    if encoded is not None:
        return encoded
    declared = (headers.get("content-type") or "").strip()
    media, _, params = declared.partition(";")
    media = media.strip().lower()
    if not media:
        return UnsupportedMediaType(f"the body has no Content-Type; send it as {JSON_TYPE}", field="content-type")
    if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
        return UnsupportedMediaType(f"the body is declared as {media!r}; send it as {JSON_TYPE}", field="content-type")
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return UnsupportedMediaType(
                f"the body is declared in charset {value.strip()!r}; send it as {JSON_TYPE}", field="content-type"
            )
    return None


def _refusal(exc: CapsuleError) -> dict[str, Any]:
    """A response built before the resolver runs (no identity, a body too large or unreadable)."""
    return {
        "statusCode": exc.status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON, **_headers(exc)},
        "body": json.dumps({"error": exc.to_dict()}),
        "isBase64Encoded": False,
    }


def _admit(
    route: routes.Route, event: dict[str, Any], takes_body: bool
) -> tuple[CapsuleError | str | None, dict[str, Any] | None]:
    """The caller's tenant, or the error that refuses the request before parsing; and the
    body, parsed once here, when it is a JSON object."""
    try:
        who = tenant_of(event) if route.auth else None
    except Unauthorized as exc:
        return exc, None
    size = body_size(event)
    if size > limits.MAX_BODY_BYTES:
        return PayloadTooLarge(
            f"the body is {size} bytes; the limit is {limits.MAX_BODY_BYTES} bytes", field="body"
        ), None
    if takes_body:
        refused = json_media_type(event)
        if refused:
            return refused, None
        body = parse_body(event)
        return (body, None) if isinstance(body, CapsuleError) else (who, body)
    encoded = content_encoding(event)
    if encoded is not None:
        return encoded, None
    # A route that reads no body still gets one decoded by Powertools: text that is not UTF-8 is refused.
    text = body_text(event)
    return (text if isinstance(text, MalformedBody) else who), None


# ---- the answer's size ------------------------------------------------------------


class ResponseTooLarge(InvalidInput):
    """An answer that Lambda would refuse (over 6 MB as it sends it): the caller asks for less."""

    code = "response_too_large"
    status = 413


# What a caller reduces when a route's answer is too large (the request's fields).
_REDUCE: dict[str, tuple[str, ...]] = {
    "search": ("k", "include_superseded"),
    "solution_search": ("k",),
    "pattern_detect": ("k",),
    "pattern_solutions": ("k",),
    "list": ("limit",),
    "candidates": ("limit",),
    "solution_list": ("limit",),
    "sync_changes": ("limit",),
}
_HEADROOM = 16 * 1024  # the status, the headers and the document's keys, beyond the body's escaped size


def response_bytes(response: dict[str, Any]) -> int:
    """About how many bytes Lambda sends for ``response`` (its body escaped again: capsule.core.wire)."""
    text = response.get("body")
    body = wire.wrapped_json_bytes(text) if isinstance(text, str) else 0
    return body + _HEADROOM


def fitted(route: routes.Route, response: dict[str, Any]) -> dict[str, Any]:
    """``response``, or a 413 naming what to ask less of when Lambda would refuse it (a failed
    invocation, a 502 no retry cures). Counted only for bodies that could be that large: a body
    of n characters is at most 6n+2 bytes escaped."""
    text = response.get("body")
    if not isinstance(text, str) or 6 * len(text) + _HEADROOM < wire.LAMBDA_RESPONSE_BYTES:
        return response
    size = response_bytes(response)
    if size < wire.LAMBDA_RESPONSE_BYTES:
        return response
    fields = _REDUCE.get(route.name, ())
    what = " or ".join(fields) if fields else "what the request asks for"
    message = (
        f"the answer would be {size} bytes, over the {wire.LAMBDA_RESPONSE_BYTES} a response may be; reduce {what}"
    )
    details = [{"field": name, "message": message} for name in fields] or None
    logger.warning("answer too large", extra={"route": route.name, "bytes": size})
    return _refusal(ResponseTooLarge(message, field=None, details=details))


def _request_id(event: dict[str, Any]) -> Any:
    """``requestContext.requestId`` (None when absent), what correlation_paths.API_GATEWAY_HTTP names."""
    context = event.get("requestContext") if isinstance(event, dict) else None
    return context.get("requestId") if isinstance(context, dict) else None


def narrowing(route: routes.Route, function: Callable[..., Any]) -> Callable[..., Any]:
    """The endpoint, its answer narrowed to what the caller can read when the route hands back
    objects derived from memories (capsule.authz.derived); other routes are left as they are.
    (Powertools reads the signature through ``__wrapped__``.)"""
    if not authz.need_of(route.name).derived:
        return function

    @functools.wraps(function)
    def narrowed(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        if scopes.current().unrestricted:
            return result
        return authz.narrow(route.name, result, scopes.readable(tenant(), service))

    return narrowed


def _accepting(endpoint: Endpoint, route: routes.Route, model: type[BaseModel] | None) -> APIGatewayHttpResolver | None:
    """For a route that may run as a job (functions.async_jobs): a resolver that validates the
    request exactly as the route's own does (a bad one is the same 4xx) and, in place of the call,
    keeps it as a job and answers 202."""
    if route.name not in async_jobs.ROUTES:
        return None
    resolver = new_resolver(model)

    @functools.wraps(endpoint.function)  # Powertools validates against the endpoint's signature
    def accept(*args: Any, **kwargs: Any) -> Any:
        event = resolver.current_event.raw_event
        async_jobs.precheck(route.name, event)
        chosen = async_jobs.dispatcher()
        assert chosen is not None  # async_jobs.wanted said so
        store = async_jobs.store_for(service().store)
        raise async_jobs.Accepted(async_jobs.accept(route, event, tenant(), store, chosen))

    register(resolver, endpoint, accept)

    @resolver.exception_handler(async_jobs.Accepted)
    def _accepted(exc: async_jobs.Accepted) -> Response:
        answer = exc.response
        return Response(answer["statusCode"], content_types.APPLICATION_JSON, answer["body"], answer["headers"])

    return resolver


def make_handler(endpoint: Endpoint) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler for one endpoint: one resolver, built once per container."""
    route = routes.by_name(endpoint.route)
    model = body_model(endpoint)
    app = new_resolver(model)
    function = narrowing(route, endpoint.function)
    register(app, endpoint, replaying(function))
    shortcut = Shortcut.of(app, route, function)
    known_query = query_names.declared(endpoint.function)
    accepting = _accepting(endpoint, route, model)

    def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
        admitted, body = _admit(route, event, model is not None)
        if isinstance(admitted, CapsuleError):
            return _refusal(admitted)
        unknown = query_names.unknown_parameter(event, known_query)
        if unknown is not None:
            return _refusal(unknown)
        own_key = byok.customer_key(event)  # X-Capsule-BYOK: the tenant's own key, this request only
        if isinstance(own_key, CapsuleError):
            return _refusal(own_key)
        token, reach_token = _tenant.set(admitted or ""), scopes.within(scopes.FULL)
        try:
            # Every embedder and database call takes what is left of the invocation, so a slow
            # dependency gives the fallback or a 503 before Lambda's own timeout ends the function.
            with deadline.within(deadline.from_lambda_context(context)), byok.holding(own_key):
                try:  # the key's or principal's scope (functions.scopes): 403 naming what is missing
                    scopes.within(scopes.admit(route, event, body, admitted, service) if route.auth else scopes.FULL)
                except CapsuleError as exc:
                    return _refusal(exc)
                # counted (functions.metering), and refused with 429 over the tenant's rate limit
                throttled = metering.admit(route, admitted or "", service, logger.warning)
                if throttled is not None:
                    return _refusal(throttled)

                def run() -> dict[str, Any]:
                    # A job (functions.async_jobs): validated now, run by a worker; not with a
                    # customer key, which is never kept
                    if accepting is not None and own_key is None and async_jobs.wanted(route, event, body):
                        return accepting.resolve(event, context)
                    if shortcut is not None and body is not None:
                        return fitted(route, shortcut.answer(event, body, context))
                    return fitted(route, app.resolve(event, context))

                key = idempotency.key_of(event) if route.name in idempotency.ROUTES else None
                if key is None:
                    return run()
                if isinstance(key, CapsuleError):
                    return _refusal(key)
                try:
                    store = idempotency.store_for(service().store)
                    return idempotency.once(route, key, admitted or "", event, body, store, run, warn=logger.warning)
                except CapsuleError as exc:
                    return _refusal(exc)
        finally:
            _tenant.reset(token)
            scopes.reset(reach_token)
            bodies.forget()

    @metrics.log_metrics
    def metered(event: dict[str, Any], context: Any) -> dict[str, Any]:
        metrics.add_metric(name=route.name, unit=MetricUnit.Count, value=1)
        return handle(event, context)

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # The correlation id is the request id (correlation_paths.API_GATEWAY_HTTP), read here
        # instead of by a JMESPath query per invocation.
        logger.set_correlation_id(_request_id(event))
        # With metrics off (capsule serve) Powertools would still collect them, print a batch
        # every 100 invocations and warn on every flush; it is asked per call, like Powertools.
        return handle(event, context) if is_metrics_disabled() else metered(event, context)

    handler.endpoint = endpoint  # type: ignore[attr-defined]  # the OpenAPI document reads it
    handler.resolver, handler.shortcut = app, shortcut  # type: ignore[attr-defined]  # tests compare the two
    return handler


@dataclass
class LocalContext:
    """The parts of a Lambda context the handlers read, for the local gateway and tests."""

    function_name: str = "capsule-local"
    aws_request_id: str = "local"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:capsule-local"
    log_group_name: str = "local"
    log_stream_name: str = "local"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


__all__ = [
    "Endpoint",
    "LocalContext",
    "error_response",
    "error_responses",
    "logger",
    "make_handler",
    "metrics",
    "narrowed",
    "new_resolver",
    "reach",
    "register",
    "service",
    "set_service",
    "tenant",
]
