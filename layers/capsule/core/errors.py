"""The one exception tree of Capsule Memory.

Everything the library raises on purpose derives from :class:`CapsuleError`.
Backend failures (SQLite, MongoDB, an embedding provider) are caught at the
store or embedder boundary and re-raised as one of these with ``raise ... from``.
HTTP statuses are assigned only at the edge (``functions/``), from ``status``.

    CapsuleError
    ├── InvalidInput        bad request: names the field (422)
    │   ├── MalformedBody   the body is not text a JSON parser can read: not UTF-8 (400)
    │   └── PayloadTooLarge body or text over a limit (413)
    ├── Unauthorized        missing or bad credentials (401)
    ├── Forbidden           authenticated but not allowed (403)
    │   └── KeyRefused      a tenant's own key (X-Capsule-BYOK) is missing or does not open its data (403)
    ├── NotFound            no such thing for this tenant (404)
    ├── Conflict            state does not allow it (409)
    │   └── PreconditionFailed  changed since the caller read it: If-Match does not match (412)
    └── Unavailable         a dependency is down or full; nothing was changed (503, Retry-After)
        └── KeyUnavailable  the key that opens the tenant's data cannot be used (key file, KMS) (503)
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is a start-up cost the warm route (capsule serve answering) does not pay
    from typing import Any


class CapsuleError(Exception):
    code = "internal"
    status = 500

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class InvalidInput(CapsuleError):
    code = "invalid_input"
    status = 422

    def __init__(self, message: str, *, field: str | None = None, details: Any = None) -> None:
        if details is None and field is not None:
            details = [{"field": field, "message": message}]
        super().__init__(message, details=details)
        self.field = field


class MalformedBody(InvalidInput):
    code = "malformed_body"
    status = 400


class UnsupportedMediaType(InvalidInput):
    code = "unsupported_media_type"
    status = 415


class PayloadTooLarge(InvalidInput):
    code = "payload_too_large"
    status = 413


class Unauthorized(CapsuleError):
    code = "unauthorized"
    status = 401


class Forbidden(CapsuleError):
    code = "forbidden"
    status = 403


class KeyRefused(Forbidden):
    code = "key_refused"


class NotFound(CapsuleError):
    code = "not_found"
    status = 404


class Conflict(CapsuleError):
    code = "conflict"
    status = 409


class PreconditionFailed(Conflict):
    code = "precondition_failed"
    status = 412


class Unavailable(CapsuleError):
    code = "unavailable"
    status = 503
    retry_after_s = 1  # the edge sends it as Retry-After: a busy or full store is worth retrying


class KeyUnavailable(Unavailable):
    code = "key_unavailable"
    retry_after_s = 5
