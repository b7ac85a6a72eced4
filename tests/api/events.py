"""Synthetic API Gateway HTTP API (payload v2) events, shaped like the ones AWS sends."""

from __future__ import annotations

import base64
import copy
import json
import uuid
from typing import Any
from urllib.parse import urlencode

from functions import routes

TEMPLATE: dict[str, Any] = {
    "version": "2.0",
    "routeKey": "",
    "rawPath": "",
    "rawQueryString": "",
    "headers": {
        "accept": "application/json",
        "content-type": "application/json",
        "host": "abc123.execute-api.eu-west-1.amazonaws.com",
        "user-agent": "pytest",
        "x-amzn-trace-id": "Root=1-5e6722a7-cc56xmpl46db7ae02d4da47e",
    },
    "requestContext": {
        "accountId": "123456789012",
        "apiId": "abc123",
        "domainName": "abc123.execute-api.eu-west-1.amazonaws.com",
        "domainPrefix": "abc123",
        "http": {"method": "", "path": "", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "pytest"},
        "requestId": "",
        "routeKey": "",
        "stage": "$default",
        "time": "29/Nov/2026:22:00:00 +0000",
        "timeEpoch": 1795989600000,
    },
    "isBase64Encoded": False,
}


def iam(tenant: str) -> dict[str, Any]:
    """The authorizer block API Gateway's IAM auth adds for a verified caller."""
    return {
        "iam": {
            "accessKey": "AKIAEXAMPLE",
            "accountId": "123456789012",
            "callerId": "AIDAEXAMPLE",
            "principalOrgId": None,
            "userArn": tenant,
            "userId": "AIDAEXAMPLE",
        }
    }


def event(
    route_name: str,
    *,
    tenant: str | None = "arn:aws:iam::123456789012:user/alice",
    body: Any = None,
    raw_body: str | None = None,
    query: dict[str, Any] | None = None,
    path_params: dict[str, str] | None = None,
    authorizer: dict[str, Any] | None = None,
    base64_body: bool = False,
) -> dict[str, Any]:
    route = routes.by_name(route_name)
    path = route.path
    for key, value in (path_params or {}).items():
        path = path.replace("{" + key + "}", value)
    e = copy.deepcopy(TEMPLATE)
    e["routeKey"] = e["requestContext"]["routeKey"] = f"{route.method} {route.path}"
    e["rawPath"] = e["requestContext"]["http"]["path"] = path
    e["requestContext"]["http"]["method"] = route.method
    e["requestContext"]["requestId"] = uuid.uuid4().hex
    if query:
        e["rawQueryString"] = urlencode(query)
        e["queryStringParameters"] = {k: str(v) for k, v in query.items()}
    if path_params:
        e["pathParameters"] = dict(path_params)
    if authorizer is not None:
        e["requestContext"]["authorizer"] = authorizer
    elif tenant is not None:
        e["requestContext"]["authorizer"] = iam(tenant)
    text = raw_body if raw_body is not None else (None if body is None else json.dumps(body))
    if text is not None:
        if base64_body:
            e["body"], e["isBase64Encoded"] = base64.b64encode(text.encode()).decode(), True
        else:
            e["body"] = text
    return e
