"""The ``X-Capsule-BYOK`` header: a tenant's own key for this one request (capsule.crypto).

Read before the handler runs and held for the request only (a context variable); a header that
is not a 32-byte key in base64 is refused with 422 naming it. The key is never logged or kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from capsule.core.errors import CapsuleError
from capsule.crypto.context import BYOK_HEADER, request_key

_NAME = BYOK_HEADER.lower()


def customer_key(event: dict[str, Any]) -> Any:
    """The request's customer key, None without the header, or the error refusing it."""
    value = next((v for k, v in (event.get("headers") or {}).items() if k.lower() == _NAME), None)
    if value is None:
        return None
    from capsule.crypto.wrappers import CustomerKey  # the ciphers load only for a request that brings a key

    try:
        return CustomerKey.from_header(value)
    except CapsuleError as exc:
        return exc


@contextmanager
def holding(key: Any) -> Iterator[None]:
    token = request_key.set(key)
    try:
        yield
    finally:
        request_key.reset(token)
