"""Query-string values parsed as the OpenAPI document says, not as loosely as pydantic allows.

A query string carries text, so a boolean is the word ``true`` or ``false`` (the document's
``type: boolean`` serialised), never ``yes``, ``1`` or ``on``; integers are pydantic's
(decimal digits) already.
"""

from __future__ import annotations

from typing import Any


def query_bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise ValueError("must be true or false")
