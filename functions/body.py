"""The checks a request body passes before any parser or model sees it.

A JSON parser given bytes that are not UTF-8, or ``[`` ten thousand times, fails in ways
no field can be named for (a decode error, a ``RecursionError``), and pydantic would meet
a lone surrogate only when the store cannot encode it. So the body is read here once:
text that is not UTF-8 is a 400, and a body that is not a JSON object, nesting deeper than
:data:`MAX_DEPTH`, a string that is not Unicode text, a key given twice in one object (the last
would silently win) or an integer of more than :data:`MAX_INT_DIGITS` digits (Python refuses to
convert it) is a 422 naming where. Bodies that are not JSON at all are left to the resolver,
which names them. The resolver reads the body through :func:`loads`, which hands back the value
parsed here: a body is parsed once per request.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import json
import sys
from typing import Any

from capsule.core.errors import InvalidInput, MalformedBody

# Deeper than any request needs: meta itself stops at capsule.core.limits.MAX_META_DEPTH under it.
MAX_DEPTH = 32
# Python's own bound on converting digits to an int (sys.get_int_max_str_digits(), 4,300 by
# default): a longer integer would fail to parse at all, so it is kept as text and refused by name.
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300

# (text, value) of the body parsed for the request being handled: the resolver's deserializer
# (loads) returns it instead of parsing the same text again.
_parsed: contextvars.ContextVar[tuple[str, Any] | None] = contextvars.ContextVar("capsule_body", default=None)


class _Repeated(dict):
    """A JSON object in which ``key`` was given more than once (the first's value is dropped by a plain parse)."""

    repeated: str = ""


class _HugeInt(str):
    """The digits of a JSON integer too long to convert."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    repeated = _Repeated(value)
    repeated.repeated = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    return repeated


def _int(digits: str) -> int | _HugeInt:
    return _HugeInt(digits) if len(digits.lstrip("-")) > MAX_INT_DIGITS else int(digits)


def decode(text: str) -> Any:
    """``json.loads`` that keeps what a plain parse would lose or fail on, for :func:`shape_error`
    to name: repeated keys and integers too long to convert."""
    return json.loads(text, object_pairs_hook=_object, parse_int=_int)


def loads(text: str) -> Any:
    """The resolver's JSON deserializer: the value :func:`parse` made of this very text, else a parse."""
    cached = _parsed.get()
    if cached is not None and (cached[0] is text or cached[0] == text):
        return cached[1]
    return decode(text)


def forget() -> None:
    """Drop the parsed body kept for the request that ends."""
    _parsed.set(None)


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
            return _too_deep(parts[: MAX_DEPTH + 1])
        if isinstance(node, _HugeInt):
            return InvalidInput(
                f"{_path(parts)}: an integer of {len(node.lstrip('-'))} digits; at most {MAX_INT_DIGITS} are taken",
                field=_path(parts),
            )
        if isinstance(node, str) and not _is_text(node):
            return _not_text(parts)
        if isinstance(node, _Repeated):
            where = _path([*parts, node.repeated])
            return InvalidInput(
                f"{where}: the key {node.repeated!r} is given more than once in one object; send it once", field=where
            )
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
        value = decode(text)
    except RecursionError:
        return InvalidInput(f"body: nested deeper than {MAX_DEPTH} levels", field="body")
    except ValueError:
        return None
    if not isinstance(value, dict):
        # Every JSON route takes an object; Powertools would read an array as its first item.
        return InvalidInput(f"the body is a JSON {_json_type(value)}; this route takes a JSON object", field="body")
    refused = shape_error(value)
    if refused is not None:
        return refused
    _parsed.set((text, value))
    return value


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    return "null" if value is None else "number"
