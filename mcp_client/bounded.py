"""Keeping tool results small: excerpts and a character budget, so no call floods the context.

Each reading tool has a budget (``max_chars``) for its structured result. Contents are cut
to excerpts first; whole items are then dropped from the end until the JSON fits. What was
cut is reported (``omitted``, ``truncated``), so the agent knows to page or narrow.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks use excerpt() and must start without pydantic (or typing)
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    from pydantic import BaseModel

    T = TypeVar("T")

DEFAULT_MAX_CHARS = 12_000  # twenty search hits (an excerpt, an id and every score signal each) fit
MIN_MAX_CHARS = 500
MAX_MAX_CHARS = 40_000
EXCERPT_CHARS = 1200  # one memory's content in a list
HIT_EXCERPT_CHARS = 200  # one search hit's: twenty fit the default budget; memory_get reads it whole
ECHO_CHARS = 200  # content echoed back by store/pin/forget/feedback


def excerpt(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters (marking the cut), and whether it was cut."""
    if len(text) <= limit:
        return text, False
    keep = max(limit - len(f" … [+{len(text)} chars]"), 0)  # room for the longest marker it could need
    return text[:keep] + f" … [+{len(text) - keep} chars]", True


def size(item: BaseModel | dict | list | Any) -> int:
    if hasattr(item, "model_dump_json"):  # a pydantic model
        return len(item.model_dump_json(by_alias=True))
    return len(json.dumps(item, default=str))


def fit(items: Sequence[T], budget: int, measure: Callable[[T], int]) -> tuple[list[T], int]:
    """The longest prefix of ``items`` whose sizes sum within ``budget`` (at least one item,
    so a single large item is still shown), and how many were left out."""
    kept: list[T] = []
    used = 0
    for item in items:
        cost = measure(item)
        if kept and used + cost > budget:
            break
        kept.append(item)
        used += cost
    return kept, len(items) - len(kept)


__all__ = [
    "excerpt",
    "fit",
    "size",
    "DEFAULT_MAX_CHARS",
    "MIN_MAX_CHARS",
    "MAX_MAX_CHARS",
    "EXCERPT_CHARS",
    "HIT_EXCERPT_CHARS",
    "ECHO_CHARS",
]
