"""Request and result of a data-key rotation over HTTP (``POST /v1/keys/rotate``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..core.models import _Request


class RotateRequest(_Request):
    reason: str = Field(
        None,
        min_length=1,
        max_length=500,
        description=(  # type: ignore[assignment]
            "Why, for the audit record (default: 'rotated on request')."
        ),
    )


class RotateResult(BaseModel):
    kid: str = Field(description="The new data key's id (the ciphertexts it seals name it).")
    version: int = Field(description="The new data key's version: 2 after the first rotation.")
    wrapped_by: str = Field(description="What wraps it: kms:<key>, local:<fingerprint> or byok:<fingerprint>.")
    explanation: str


def rotate_for(service, tenant: str, request: RotateRequest | dict) -> RotateResult:
    """Rotate the caller's own data key (a tenant with its own key must send it: X-Capsule-BYOK)."""
    from ..core.errors import Conflict
    from ..core.fielderrors import validate
    from .reseal import rotate

    req = validate(RotateRequest, request)
    if getattr(service.store, "sealer", None) is None:
        raise Conflict("this deployment encrypts nothing at rest: there is no data key to rotate")
    said = rotate(service.store, service.governance_store, tenant, actor=tenant, at=service.clock(), why=req.reason)
    row = service.store.sealer.keyring.rows(tenant)[-1]
    return RotateResult(
        kid=row.kid, version=row.version, wrapped_by=row.wrapped_by, explanation=said[0].upper() + said[1:] + "."
    )
