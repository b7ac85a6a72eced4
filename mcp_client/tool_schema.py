"""The input schema a tool publishes, written for a model to read: every conversation pays for it.

pydantic's schema for a signature is made for validators: a ``title`` per property, ``anyOf [X,
null]`` with ``default: null`` for each optional argument, and every length and pattern bound.
A model needs the names, types, choices, small numeric ranges and descriptions. :func:`compact`
keeps those and drops the rest; the server still checks every bound it dropped, and refuses a
value beyond one with a one-line error naming the argument (:mod:`.strict_tools`).
"""

from __future__ import annotations

from typing import Any

# Bounds a model does not need to call a tool right (the server enforces them and says so).
DROPPED = frozenset({"title", "maxLength", "minLength", "maxItems", "minItems", "pattern", "propertyNames"})


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a tool's input schema) for a model's eyes; see the module doc."""
    out = _node(schema)
    out["additionalProperties"] = schema.get("additionalProperties", False)  # the root's rule is kept
    return out


def _node(node: Any) -> Any:
    if isinstance(node, list):
        return [_node(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = _optional(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in DROPPED or (key == "default" and value is None):
            continue
        if key == "additionalProperties" and value is True:
            continue  # the default of JSON Schema
        if key in ("properties", "$defs"):
            out[key] = {name: _node(sub) for name, sub in value.items()}
        else:
            out[key] = _node(value)
    return out


def _optional(node: dict[str, Any]) -> dict[str, Any]:
    """``anyOf [X, {"type": "null"}]`` as X: an optional argument is one a caller leaves out."""
    choices = node.get("anyOf")
    if not isinstance(choices, list) or {"type": "null"} not in choices:
        return node
    rest = [choice for choice in choices if choice != {"type": "null"}]
    if len(rest) != 1 or not isinstance(rest[0], dict):
        return node
    merged = {key: value for key, value in node.items() if key != "anyOf"}
    return {**rest[0], **merged}


# What MCP assumes of a tool that does not say (the spec's ToolAnnotations defaults).
ANNOTATION_DEFAULTS = {
    "read_only_hint": False,
    "destructive_hint": True,
    "idempotent_hint": False,
    "open_world_hint": True,
}


def without_defaults(annotations: Any) -> Any:
    """``annotations`` saying only what differs from MCP's defaults (a read-only tool's destructive and
    idempotent hints mean nothing, so they go too)."""
    if annotations is None:
        return None
    drop = {key for key, value in ANNOTATION_DEFAULTS.items() if getattr(annotations, key, None) == value}
    if getattr(annotations, "read_only_hint", None):
        drop |= {"destructive_hint", "idempotent_hint"}
    return annotations.model_copy(update={key: None for key in drop})


def one_line(text: str | None) -> str | None:
    """A docstring's description with its indentation and line breaks folded to single spaces."""
    return " ".join(text.split()) if text else text


__all__ = ["compact", "one_line", "without_defaults", "DROPPED", "ANNOTATION_DEFAULTS"]
