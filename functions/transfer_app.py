"""What the export and import handlers share: the stores of the service, and the raw event
(an import body is JSON Lines, which the resolver does not parse)."""

from __future__ import annotations

import base64
import contextvars
from collections.abc import Callable
from typing import Any

from capsule.store.sides import transfer_store
from capsule.transfer import Sources

from . import app
from .learning_app import learning

_event: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("capsule_transfer_event")


def sources() -> Sources:
    service = app.service()
    return Sources(service.store, learning().store, transfer_store(service.store), policies=service.guard_policies)


def raw_body() -> bytes:
    """The request body as sent (its size was checked against the limit before parsing)."""
    event = _event.get()
    body = event.get("body") or ""
    return base64.b64decode(body) if event.get("isBase64Encoded") else body.encode("utf-8", "surrogatepass")


Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def with_event(handler: Handler) -> Handler:
    """The Lambda handler, keeping its event where :func:`raw_body` reads it."""

    def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
        token = _event.set(event)
        try:
            return handler(event, context)
        finally:
            _event.reset(token)

    run.endpoint = handler.endpoint  # type: ignore[attr-defined]
    return run
