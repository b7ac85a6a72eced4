"""The tenant comes from the verified identity in the request context, never from the request.

API Gateway's IAM auth puts the SigV4-verified principal in ``requestContext.authorizer.iam``;
a Lambda authorizer (API keys, the local token) puts its context in
``requestContext.authorizer.lambda``. Body, query and headers are never consulted.
"""

from __future__ import annotations

from typing import Any

from capsule.errors import Unauthorized


def tenant_of(event: dict[str, Any]) -> str:
    """The caller's tenant, or Unauthorized when the event carries no verified identity."""
    authorizer = ((event.get("requestContext") or {}).get("authorizer")) or {}
    iam = authorizer.get("iam") or {}
    for key in ("userArn", "userId"):
        value = iam.get(key)
        if isinstance(value, str) and value:
            return value
    context = authorizer.get("lambda") or {}
    value = context.get("tenant")
    if isinstance(value, str) and value:
        return value
    raise Unauthorized("no verified identity: sign the request (SigV4) or send a token or API key")
