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

from . import routes
from .app import Endpoint, new_resolver, register

TITLE = "Capsule Memory"
VERSION = "1"
DESCRIPTION = (
    "Long-term memory for AI agents. Every route but this document needs an identity: "
    "a bearer token or API key (`capsule serve`), or a SigV4 signature (service `execute-api`). "
    "Errors are `{\"error\": {\"code\", \"message\", \"details\"}}`."
)


def endpoint_of(route: routes.Route) -> Endpoint:
    module_name, _, attribute = route.handler.partition(":")
    return getattr(importlib.import_module(module_name), attribute).endpoint


@functools.lru_cache(maxsize=1)
def document() -> dict[str, Any]:
    app = new_resolver()
    for route in routes.ROUTES:
        register(app, endpoint_of(route))
    text = app.get_openapi_json_schema(
        title=TITLE, version=VERSION, description=DESCRIPTION,
        security_schemes={
            "bearer": HTTPBearer(description="The local token or a named API key (`capsule keys create`)."),
            "sigv4": APIKey(name="Authorization", in_=APIKeyIn.header,
                            description="AWS Signature Version 4, service execute-api.",
                            **{"x-amazon-apigateway-authtype": "awsSigv4"}),
        },
    )
    return json.loads(text)
