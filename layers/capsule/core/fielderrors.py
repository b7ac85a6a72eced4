"""Validation errors as users read them: the field's dotted name and a plain message.

Pydantic's own wording is kept where it is already plain ("Input should be a valid
boolean"); its boilerplate is not: no documentation links, no "Value error, " prefix, and
an unknown field reads ``unknown field 'pinned' (did you mean 'pin'?)``, the nearest name
looked up among the fields the model knows at that place.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InvalidInput

# What a pattern means, for the error a caller reads: the models register theirs here
# (capsule.core.models fills it), so this module reads no model.
PATTERN_MESSAGES: dict[str, str] = {}


def _models_in(annotation: Any) -> Iterable[type[BaseModel]]:
    """The pydantic models an annotation can hold (through Optional, list, dict, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def _names(model: type[BaseModel]) -> list[str]:
    names = []
    for name, info in model.model_fields.items():
        names.append(info.alias or name)
    return names


def model_at(model: type[BaseModel] | None, loc: Sequence[Any]) -> type[BaseModel] | None:
    """The model that holds the last part of ``loc`` (list indexes and dict keys skipped)."""
    current = model
    for part in loc:
        if current is None:
            return None
        if not isinstance(part, str):
            continue
        field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            continue  # a dict key or a union's tag: the model stays the one holding it
        current = next(iter(_models_in(field.annotation)), None)
    return current


def suggestion(unknown: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(unknown, known, n=1, cutoff=0.5)
    if not close:
        close = [k for k in known if k.startswith(unknown) or unknown.startswith(k)][:1]
    return f" (did you mean '{close[0]}'?)" if close else ""


def _message(err: dict[str, Any], model: type[BaseModel] | None, loc: Sequence[Any]) -> str:
    if err.get("type") == "extra_forbidden":
        name = str(loc[-1]) if loc else "?"
        owner = model_at(model, loc[:-1])
        return f"unknown field '{name}'" + (suggestion(name, _names(owner)) if owner else "")
    if err.get("type") == "string_pattern_mismatch":
        plain = PATTERN_MESSAGES.get(str((err.get("ctx") or {}).get("pattern")))
        if plain:
            return plain
    message = str(err.get("msg", "invalid"))
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    return message


def field_name(loc: Sequence[Any]) -> str:
    # A union's member shows in the location as its validator's tag ("function-after[...]",
    # "literal['unlimited']"): not a field a caller could name, so it is left out.
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and ("[" in p or "(" in p))) or "body"


def details_of(
    errors: Iterable[dict[str, Any]], model: type[BaseModel] | None = None, skip: int = 0
) -> list[dict[str, Any]]:
    """``skip`` leading parts of each location are the transport's (``body``, ``query``)."""
    details = []
    for err in errors:
        loc = tuple(err.get("loc", ()))[skip:]
        details.append({"field": field_name(loc), "message": _message(err, model, loc), "type": err.get("type")})
    return details


def invalid_input(
    errors: Iterable[dict[str, Any]], model: type[BaseModel] | None = None, skip: int = 0
) -> InvalidInput:
    details = details_of(errors, model, skip) or [{"field": "body", "message": "invalid", "type": None}]
    first = details[0]
    message = f"{first['field']}: {first['message']}"
    if len(details) > 1:
        message += f" (and {len(details) - 1} more)"
    return InvalidInput(message, field=first["field"], details=details)


def from_validation_error(exc: Any, model: Any = None) -> InvalidInput:
    """Turn a pydantic ``ValidationError`` into ours, naming each field (and, for an unknown
    field, the nearest known name of ``model``)."""
    return invalid_input(exc.errors(include_url=False, include_input=False), model)


M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], data: Any) -> M:
    """Validate ``data`` into ``model``; a failure is InvalidInput naming the field."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, model) from exc
