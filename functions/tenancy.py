"""The tenant comes from the verified identity in the request context, never from the request.

API Gateway's IAM auth puts the SigV4-verified principal in ``requestContext.authorizer.iam``;
a Lambda authorizer (API keys, the local token) puts its context in
``requestContext.authorizer.lambda``. Body, query and headers are never consulted.

Which principal is the tenant (:func:`principal_tenant`):

- an IAM user (``arn:aws:iam::ACCOUNT:user/PATH/NAME``) or the root (``arn:aws:iam::ACCOUNT:root``):
  its ARN, as it always was;
- an assumed role (``arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION``: ``role_arn`` profiles,
  IAM Identity Center, EC2/ECS/Lambda/CI roles): the role, ``arn:aws:iam::ACCOUNT:role/NAME``.
  The session name is renewed with the credentials (botocore names it
  ``botocore-session-<epoch>``, ECS the task, CI the run), and whoever assumes a role chooses
  it, so it identifies nobody: the role is what AWS authorized. The assumed-role ARN carries
  no role path; a role name is unique in its account whatever its path, so ``role/NAME`` names
  one role. Identity Center sets the session name to the user's name: the people of one
  permission set share its role and so its tenant (give them separate permission sets, or
  deploy with ``tenant_per_session``);
- a Cognito identity (the role's session carries ``cognitoIdentity``): the identity Cognito
  verified, since every user of an identity pool shares its role;
- a federated user (``arn:aws:sts::ACCOUNT:federated-user/NAME``, GetFederationToken): its ARN.
  The name is the one the federating broker vouches for and is stable across tokens; its ARN
  carries no session part and does not say which IAM user federated it, so there is nothing
  to map it to.

``CAPSULE_TENANT_PER_SESSION=true`` (the CDK context ``tenant_per_session``) keeps the raw
``userArn`` of assumed roles, one tenant per session, as before (Cognito identities stay
their own either way). ``capsule tenants merge --from-sessions`` moves what earlier versions
stored under session ARNs into the role's tenant (:mod:`capsule.store.tenants`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from capsule.core.errors import Unauthorized
from capsule.store.tenants import role_of_session

PER_SESSION_VARIABLE = "CAPSULE_TENANT_PER_SESSION"


def per_session(environ: Mapping[str, str] | None = None) -> bool:
    value = (os.environ if environ is None else environ).get(PER_SESSION_VARIABLE, "")
    return value.strip().lower() in ("1", "true", "yes")


def _cognito_tenant(iam: Mapping[str, Any]) -> str | None:
    identity = iam.get("cognitoIdentity")
    if not isinstance(identity, Mapping):
        return None
    pool, identity_id = identity.get("identityPoolId"), identity.get("identityId")
    if isinstance(pool, str) and pool and isinstance(identity_id, str) and identity_id:
        return f"cognito-identity:{pool}/{identity_id}"
    return None


def principal_tenant(iam: Mapping[str, Any], *, keep_sessions: bool = False) -> str | None:
    """The tenant of an ``authorizer.iam`` block (see the module docstring), or None."""
    arn = iam.get("userArn")
    if isinstance(arn, str) and arn:
        if role_of_session(arn) is None:
            return arn
        return _cognito_tenant(iam) or (arn if keep_sessions else role_of_session(arn))
    user_id = iam.get("userId")
    return user_id if isinstance(user_id, str) and user_id else None


def tenant_of(event: dict[str, Any], *, keep_sessions: bool | None = None) -> str:
    """The caller's tenant, or Unauthorized when the event carries no verified identity.

    ``keep_sessions`` None reads ``CAPSULE_TENANT_PER_SESSION`` from the environment."""
    authorizer = ((event.get("requestContext") or {}).get("authorizer")) or {}
    iam = authorizer.get("iam") or {}
    if isinstance(iam, Mapping):
        tenant = principal_tenant(iam, keep_sessions=per_session() if keep_sessions is None else keep_sessions)
        if tenant:
            return tenant
    context = authorizer.get("lambda") or {}
    value = context.get("tenant")
    if isinstance(value, str) and value:
        return value
    raise Unauthorized("no verified identity: sign the request (SigV4) or send a token or API key")
