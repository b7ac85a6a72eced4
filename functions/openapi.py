"""The OpenAPI 3 document of the whole API, generated from the handlers' models.

Every route of :data:`functions.routes.ROUTES` is registered on one resolver (the same
:class:`functions.app.Endpoint` its own handler registers), so the document covers
exactly the routes that exist, with their request, response and error schemas.
"""

from __future__ import annotations

import functools
import importlib
import json
from typing import Any

from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn, HTTPBearer

from capsule.core import limits

from . import async_jobs, idempotency, routes
from .app import Endpoint, new_resolver, register

TITLE = "Capsule Memory"
VERSION = "1"
DESCRIPTION = (
    "Long-term memory for AI agents. Every route but this document needs an identity: "
    "a bearer token or API key (`capsule serve`), or a SigV4 signature (service `execute-api`). "
    'Errors are `{"error": {"code", "message", "details"}}`. Each operation\'s `x-capsule-scope` '
    "says the access a key or principal needs (`read`, `write`, `admin`; also its security roles) and what it "
    "reaches (`memory`, `project`, `project_all`, `filtered`, `derived`, `tenant`, `any`: see capsule.authz.needs); a "
    "request outside the caller's scope is a 403 naming what is missing. A request body over "
    "`x-capsule-max-body-bytes` bytes (an extension of this document) is refused with 413 before it is parsed, "
    "whatever else it holds. An operation's `x-capsule-rules` lists the rules its schemas cannot state (relative "
    "to now, to what is stored, or across fields), each with the status (`422`, `412`) a request the schemas "
    "allow gets when it breaks that rule; the error names the field."
)


def handler_of(route: routes.Route) -> Any:
    module_name, _, attribute = route.handler.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def endpoint_of(route: routes.Route) -> Endpoint:
    return handler_of(route).endpoint


def _media_types(doc: dict[str, Any]) -> dict[str, Any]:
    """What the type hints cannot say (a body that is not JSON), from the handler's ``openapi``."""
    for route in routes.ROUTES:
        extra = getattr(handler_of(route), "openapi", None)
        if extra:
            _merge(doc["paths"][route.path][route.method.lower()], extra)
    return doc


def _idempotency_keys(doc: dict[str, Any]) -> dict[str, Any]:
    """The ``Idempotency-Key`` header on the writes that honour it (functions.idempotency)."""
    for route in routes.ROUTES:
        if route.name not in idempotency.ROUTES:
            continue
        operation = doc["paths"][route.path][route.method.lower()]
        operation.setdefault("parameters", []).append(
            {
                "name": idempotency.HEADER,
                "in": "header",
                "required": False,
                "description": (
                    "A key for this one request (1 to 255 printable ASCII characters, kept per tenant for "
                    f"{idempotency.TTL_S // 3600} hours): sent again with the same request, the first success is "
                    f"answered again (header {idempotency.REPLAYED_HEADER}: true) without doing the work twice; "
                    "with another request it is a 422 naming the header; while the first still runs, a 409 "
                    "(code idempotency_in_progress) with Retry-After."
                ),
                "schema": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": idempotency.MAX_KEY_CHARS,
                    "pattern": "^[\\x21-\\x2b\\x2d-\\x7e]+$",
                },
            }
        )
        # A key's earlier request is stored data: no schema can say the key is taken.
        operation.setdefault("x-capsule-rules", []).append(
            {"status": 422, "rule": f"an {idempotency.HEADER} already sent with another request is refused"}
        )
    return doc


def _jobs(doc: dict[str, Any]) -> dict[str, Any]:
    """``Prefer: respond-async`` and the 202 of a job on the routes that may run as one
    (functions.async_jobs); the job's own route documents itself."""
    doc["components"]["schemas"]["JobAccepted"] = async_jobs.JobAccepted.model_json_schema()
    for route in routes.ROUTES:
        if route.name not in async_jobs.ROUTES:
            continue
        operation = doc["paths"][route.path][route.method.lower()]
        operation.setdefault("parameters", []).append(
            {
                "name": "Prefer",
                "in": "header",
                "required": False,
                "description": (
                    "respond-async (RFC 7240): run the request as a job and answer 202 at once; a request over "
                    "the synchronous budget becomes one without asking (docs/http-api.md, Jobs). Other "
                    "preferences are ignored, as RFC 7240 says."
                ),
                "schema": {"type": "string"},
            }
        )
        operation["responses"]["202"] = {
            "description": "Accepted as a job: GET the Location until its status is succeeded or failed",
            "headers": {
                "Location": {"description": "The job: /v1/jobs/{id}", "required": True, "schema": {"type": "string"}},
                "Retry-After": {
                    "description": "Seconds before a first poll is worth making",
                    "required": True,
                    "schema": {"type": "integer", "minimum": 0},
                },
            },
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JobAccepted"}}},
        }
    return doc


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> None:
    """Deep, except that a ``content`` (the media types) replaces the generated one."""
    for key, value in extra.items():
        if key != "content" and isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


@functools.lru_cache(maxsize=1)
def document() -> dict[str, Any]:
    app = new_resolver()
    for route in routes.ROUTES:
        register(app, endpoint_of(route))
    text = app.get_openapi_json_schema(
        title=TITLE,
        version=VERSION,
        description=DESCRIPTION,
        security_schemes={
            "bearer": HTTPBearer(description="The local token or a named API key (`capsule keys create`)."),
            "sigv4": APIKey(
                name="Authorization",
                in_=APIKeyIn.header,
                description="AWS Signature Version 4, service execute-api.",
                **{"x-amazon-apigateway-authtype": "awsSigv4"},
            ),
        },
    )
    doc = _jobs(_idempotency_keys(_media_types(json.loads(text))))
    doc["x-capsule-max-body-bytes"] = limits.MAX_BODY_BYTES
    return doc
