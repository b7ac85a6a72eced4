"""The resolver's answer to a valid JSON request, without the resolver's per-request work.

For each request Powertools' resolver wraps the event in an event object, matches the route,
runs its middleware frames, parses the body again, validates it, calls the endpoint,
validates the result, dumps it to Python objects and then to JSON, and formats debug lines
whether or not debug logging is on: about half a millisecond of CPU, as much as a small
search. A route whose only input is its JSON body (store, search, ...) takes this shortcut,
in Lambda and in ``capsule serve`` alike: the body the admission check parsed is validated
by Powertools' own function against the route's own fields, the endpoint is called, and its
result is validated and serialised by the route's return field and the resolver's serializer,
in the response the resolver's builder makes of it (:meth:`Shortcut.response`).

Anything else goes through the resolver itself: another path or method, a content type it
would refuse, a body its fields refuse (validated again there; nothing ran), and an endpoint
that raised or returned something other than its declared model. Those outcomes are
replayed to the resolver (:func:`replaying`), so the endpoint never runs twice and every
error answer is the resolver's own.
"""

from __future__ import annotations

import contextvars
import functools
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, content_types
from aws_lambda_powertools.event_handler.api_gateway import ProxyEventType, ResponseBuilder
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    _is_or_contains_sequence,
    _validate_field,
)
from pydantic import BaseModel

from . import routes

# (raised, value) of an endpoint call made by the shortcut, which the resolver then answers.
_replay: contextvars.ContextVar[tuple[bool, Any] | None] = contextvars.ContextVar("capsule_replay", default=None)


def replaying(function: Callable[..., Any]) -> Callable[..., Any]:
    """The endpoint as the resolver calls it: the function itself, or the outcome of the call
    the shortcut already made. (Powertools reads the signature through ``__wrapped__``.)"""

    @functools.wraps(function)
    def endpoint(*args: Any, **kwargs: Any) -> Any:
        outcome = _replay.get()
        if outcome is None:
            return function(*args, **kwargs)
        raised, value = outcome
        if raised:
            raise value
        return value

    return endpoint


@dataclass(frozen=True)
class Shortcut:
    resolver: APIGatewayHttpResolver
    route: Any  # the resolver's own Route
    function: Callable[..., Any]
    returns: type[BaseModel]

    @classmethod
    def of(cls, resolver: APIGatewayHttpResolver, route: routes.Route, function: Callable[..., Any]) -> Shortcut | None:
        """The shortcut for a resolver holding this one route, None if its route takes more
        than a JSON body or answers with more than a model (the resolver serves it whole)."""
        registered = [*resolver._static_routes, *resolver._dynamic_routes]
        if len(registered) != 1 or "{" in route.path or resolver._router_middlewares:
            return None
        builder = resolver._response_builder_class  # ResponseBuilder[BaseProxyEvent]
        if (
            resolver._proxy_type != ProxyEventType.APIGatewayProxyEventV2
            or (typing.get_origin(builder) or builder) is not ResponseBuilder
        ):
            return None  # response() makes the payload v2 answer of the default builder
        found = registered[0]
        dependant = found.dependant
        simple = (
            found.method == route.method
            and not found.cors
            and not found.compress
            and found.cache_control is None
            and not found.middlewares
            and dependant.body_params
            and not (
                dependant.path_params
                or dependant.query_params
                or dependant.header_params
                or dependant.cookie_params
                or dependant.dependencies
            )
        )
        returns = dependant.return_param.type_ if dependant.return_param is not None else None
        if not simple or not _is_model(returns) or len(dependant.body_params) != 1:
            return None
        # One body model, not embedded: Powertools validates the whole body as that model.
        body = dependant.body_params[0]
        if (
            getattr(body.field_info, "embed", None)
            or not _is_model(body.field_info.annotation)
            or _is_or_contains_sequence(body.field_info.annotation)
        ):
            return None
        return cls(resolver, found, function, returns)

    def applies(self, event: dict[str, Any]) -> bool:
        """The request is the one route the resolver holds, with a body it reads as JSON."""
        http = (event.get("requestContext") or {}).get("http") or {}
        if event.get("rawPath") != self.route.path or str(http.get("method", "")).upper() != self.route.method:
            return False
        declared = next((v for k, v in (event.get("headers") or {}).items() if k.lower() == "content-type"), "")
        declared = (declared or "").strip()
        return not declared or declared.startswith(content_types.APPLICATION_JSON)

    def answer(self, event: dict[str, Any], body: dict[str, Any], context: Any) -> dict[str, Any]:
        """The response to ``event`` whose parsed JSON body is ``body``."""
        if not self.applies(event):
            return self.resolver.resolve(event, context)
        field = self.route.dependant.body_params[0]
        request, errors = field.validate(body, loc=("body",))
        if errors:
            return self.resolver.resolve(event, context)
        try:
            result = self.function(**{field.name: request})
        except Exception as exc:  # the resolver's exception handlers answer it
            return self._replayed(event, context, (True, exc))
        if type(result) is not self.returns:
            return self._replayed(event, context, (False, result))
        problems: list[Any] = []
        checked = _validate_field(
            field=self.route.dependant.return_param, value=result, loc=("response",), existing_errors=problems
        )
        if problems:
            return self._replayed(event, context, (False, result))
        serialized = self.route.dependant.return_param.serialize(checked, by_alias=True)
        return self.response(self.resolver._serializer(serialized))

    def response(self, body: str) -> dict[str, Any]:
        """The resolver's response for a JSON ``body``, as its ResponseBuilder makes it for an
        HTTP API (payload v2) event, without building the event object, the builder and the
        header serializer per request: no CORS, cache control or compression applies (checked
        in of()), no cookies are set, and the one header is the JSON content type."""
        return {
            "statusCode": self.route.status_code,
            "body": body,
            "isBase64Encoded": False,
            "headers": {"Content-Type": content_types.APPLICATION_JSON},
            "cookies": [],
        }

    def _replayed(self, event: dict[str, Any], context: Any, outcome: tuple[bool, Any]) -> dict[str, Any]:
        token = _replay.set(outcome)
        try:
            return self.resolver.resolve(event, context)
        finally:
            _replay.reset(token)


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
