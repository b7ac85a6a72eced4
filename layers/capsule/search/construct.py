"""Pydantic models made from values already known to be valid, without pydantic's per-call work.

``model_construct`` checks every field for a default, an alias and a validator before it sets
them: for a search's hits (a model, its components and its chunk for each) that was a tenth of
the search. :func:`built` sets the same state directly; it is for values naming every field,
so there is no default to fill in.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_set = object.__setattr__  # pydantic models refuse setattr of their own slots
_FIELDS: dict[type, tuple[str, ...]] = {}


def built(cls: type[M], values: dict[str, Any]) -> M:
    """``cls.model_construct(**values)`` for ``values`` giving every field of ``cls`` by its
    name, in the order the model declares them (what ``model_construct`` would produce)."""
    fields = _FIELDS.get(cls) or _FIELDS.setdefault(cls, tuple(cls.model_fields))
    if tuple(values) != fields:  # a field added to the model but not here would vanish from answers
        raise TypeError(f"{cls.__name__} needs the fields {fields}, in order; got {tuple(values)}")
    model = cls.__new__(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model
