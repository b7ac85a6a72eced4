"""The hosted API-key authorizer (deployed with ``cdk deploy -c api_key_auth=true``).

An API Gateway HTTP API Lambda authorizer with simple responses: it hashes the presented
key (``Authorization: Bearer <key>``) and compares it, in constant time, with the hashes in
the deployment's secret under ``api_keys`` — ``{"name": {"sha256": ..., "tenant": ...}}``,
the shape ``capsule keys`` keeps locally — so keys are never stored in the clear. The
tenant it returns reaches the handlers as ``requestContext.authorizer.lambda.tenant``; a key
with a ``scope`` (functions.scopes) passes it on as ``lambda.scope`` (JSON text).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from capsule.core.errors import CapsuleError

from .auth import Bearer, verify_bearer
from .secrets import SECRET_ARN_VARIABLE, fetch_secret


def known_keys(secret: Mapping[str, Any]) -> dict[str, Bearer]:
    keys = secret.get("api_keys") or {}
    return {
        entry["sha256"]: Bearer(name, entry["tenant"], entry.get("scope"))
        for name, entry in keys.items()
        if isinstance(entry, Mapping) and entry.get("sha256") and entry.get("tenant")
    }


def presented_key(event: Mapping[str, Any]) -> str | None:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    scheme, _, value = (headers.get("authorization") or "").strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def decide(event: Mapping[str, Any], secret: Mapping[str, Any]) -> dict[str, Any]:
    key = presented_key(event)
    if key is None:
        return {"isAuthorized": False}
    try:
        context = verify_bearer(key, known_keys(secret))["lambda"]
    except CapsuleError:
        return {"isAuthorized": False}
    return {"isAuthorized": True, "context": context}


def make_handler(fetch: Callable[[str], Mapping[str, Any]] = fetch_secret) -> Callable[..., dict[str, Any]]:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        # Powertools caches the secret, so a warm authorizer does not call Secrets Manager.
        return decide(event, fetch(os.environ[SECRET_ARN_VARIABLE]))

    return handler


handler = make_handler()
