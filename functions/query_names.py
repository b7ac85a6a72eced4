"""Strict query strings: a parameter the endpoint does not declare is refused with its name.

Powertools ignores query parameters it was not told about, so ``?forgoten=true`` listed the
active memories as if nothing had been asked. Every route's parameters are its function's
parameters (query, path and body alike: a body or path name in the query string is not a
typo of a query parameter, and Powertools reads it from where it belongs).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from capsule.core.errors import InvalidInput
from capsule.core.fielderrors import suggestion


def declared(function: Callable[..., Any]) -> tuple[str, ...]:
    """The names a request may use for the function's parameters (an alias where one is set)."""
    names = []
    for name, parameter in inspect.signature(function).parameters.items():
        names.append(name)
        for extra in typing.get_args(parameter.annotation)[1:]:
            alias = getattr(extra, "alias", None)
            if isinstance(alias, str):
                names.append(alias)
    return tuple(dict.fromkeys(names))


def unknown_parameter(event: dict[str, Any], known: tuple[str, ...]) -> InvalidInput | None:
    """The refusal of the first query parameter ``known`` does not hold, or None."""
    for name in event.get("queryStringParameters") or {}:
        if name not in known:
            return InvalidInput(f"unknown query parameter '{name}'" + suggestion(name, known), field=name)
    return None
