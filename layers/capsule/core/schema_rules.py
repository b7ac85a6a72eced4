"""JSON Schema for rules across a body's fields, for the OpenAPI document (``json_schema_extra``).

A field's own limits come from its pydantic type. Rules that join fields (at least one given,
this one only without that one) are written with these, beside the check that enforces them, from
the same field names. A null field counts as one left out, as the validators read it.
:class:`SchemaOf` gives a field checked in code the schema of the type that states its check.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter


def given(name: str) -> dict[str, Any]:
    """``name`` is given, and not null."""
    return {"required": [name], "properties": {name: {"not": {"type": "null"}}}}


def absent(*names: str) -> dict[str, Any]:
    """Each of ``names`` is left out or null."""
    return {"properties": {name: {"type": "null"} for name in names}}


def any_given(names: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """At least one of ``names`` is given, not null."""
    return {"anyOf": [given(name) for name in names]}


def together(*names: str) -> dict[str, Any]:
    """All of ``names`` given (not null), or none of them."""
    return {"anyOf": [absent(*names), {"allOf": [given(name) for name in names]}]}


class SchemaOf:
    """``Annotated[T, SchemaOf(U)]``: validated as ``T``, documented as ``U`` (its definitions
    become components like any model's)."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        return handler(TypeAdapter(self.shape).core_schema)
