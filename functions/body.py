"""The checks a request body passes before any parser or model sees it.

A JSON parser given bytes that are not UTF-8, or ``[`` ten thousand times, fails in ways
no field can be named for (a decode error, a ``RecursionError``), and pydantic would meet
a lone surrogate only when the store cannot encode it. So the body is read here once:
text that is not UTF-8 is a 400, and a body that is not a JSON object, nesting deeper than
:data:`MAX_DEPTH` or a string that is not Unicode text is a 422 naming where. Bodies that are not JSON at all are left
to the resolver, which names them.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from capsule.errors import InvalidInput, MalformedBody

# Deeper than any request needs: meta itself stops at capsule.limits.MAX_META_DEPTH under it.
MAX_DEPTH = 32


def body_text(event: dict[str, Any]) -> str | MalformedBody | None:
    body = event.get("body")
    if not body:
        return None
    if not event.get("isBase64Encoded"):
        return body
    try:
        return base64.b64decode(body, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return MalformedBody("the body is not valid UTF-8 text; send JSON encoded as UTF-8", field="body")


def _path(parts: list[Any]) -> str:
    return ".".join(str(p) for p in parts) or "body"


def _too_deep(parts: list[Any]) -> InvalidInput:
    return InvalidInput(f"{_path(parts)}: nested deeper than {MAX_DEPTH} levels", field=_path(parts))


def _not_text(parts: list[Any]) -> InvalidInput:
    return InvalidInput(f"{_path(parts)}: holds a lone surrogate, which is not Unicode text", field=_path(parts))


def _children(value: Any) -> list[tuple[Any, Any]]:
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list):
        return list(enumerate(value))
    return []


def shape_error(value: Any) -> InvalidInput | None:
    """The first place where a parsed body is nested too deep or holds a non-text string."""
    stack: list[tuple[list[Any], Any]] = [([], value)]
    while stack:
        parts, node = stack.pop()
        if len(parts) > MAX_DEPTH:
            return _too_deep(parts[:MAX_DEPTH + 1])
        if isinstance(node, str) and not _is_text(node):
            return _not_text(parts)
        for key, child in _children(node):
            if isinstance(key, str) and not _is_text(key):
                return _not_text(parts)
            stack.append(([*parts, key], child))
    return None


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check(event: dict[str, Any]) -> InvalidInput | None:
    """The error that refuses this body before it is parsed for real, or None."""
    value = parse(event)
    return value if isinstance(value, InvalidInput) else None


def parse(event: dict[str, Any]) -> dict[str, Any] | InvalidInput | None:
    """The body as a JSON object, the error that refuses it, or None: no body, or not JSON
    (the resolver says so, with the position)."""
    text = body_text(event)
    if text is None or isinstance(text, InvalidInput):
        return text
    try:
        value = json.loads(text)
    except RecursionError:
        return InvalidInput(f"body: nested deeper than {MAX_DEPTH} levels", field="body")
    except ValueError:
        return None
    if not isinstance(value, dict):
        # Every JSON route takes an object; Powertools would read an array as its first item.
        return InvalidInput(f"the body is a JSON {_json_type(value)}; this route takes a JSON object", field="body")
    return shape_error(value) or value


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    return "null" if value is None else "number"
