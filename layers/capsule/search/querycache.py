"""The query cache: a search's result, reused for 5 minutes while nothing in its projects changes.

Each entry is keyed on the request *and* the change markers (per-project versions, see
:meth:`MemoryStore.change_markers`) of the projects it searched. Any write to one of those
projects, by this process or any other, moves its marker, so the next identical search
misses; the cache needs no invalidation messages and stays right with several processes.

What goes in and what comes out are copies (:func:`fresh`), so a caller changing its result
changes nothing cached; a cache of values nothing changes (``copy=None``, as the service's
:class:`capsule.search.answers.Answer`) keeps and gives out the values themselves.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from datetime import date, datetime, time, timedelta
from enum import Enum
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from ..core import limits

T = TypeVar("T")

# Values nothing can change in place: a copy may share them.
_IMMUTABLE = (str, int, float, bool, bytes, type(None), date, datetime, time, timedelta, Enum)
# The same by exact type: one set look-up for the leaves a result is mostly made of.
_LEAVES = frozenset({str, int, float, bool, bytes, type(None), date, datetime, time, timedelta})


def fresh(value: T) -> T:
    """A copy of a result that shares nothing a caller could change with the original.

    Like ``model_copy(deep=True)``, at a sixth of its cost: a search's result is pydantic models,
    lists, JSON dicts and immutable leaves, and :func:`copy.deepcopy` spends most of its time
    on the memo of every leaf. Anything else falls back to ``deepcopy``."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is list:
        return [item if type(item) in _LEAVES else fresh(item) for item in value]  # type: ignore[attr-defined, return-value]
    if kind is dict:
        pairs: Any = value
        return {key: item if type(item) in _LEAVES else fresh(item) for key, item in pairs.items()}  # type: ignore[return-value]
    if isinstance(value, BaseModel):
        return _model(value)  # type: ignore[return-value]
    if isinstance(value, _IMMUTABLE):  # their subclasses (an Enum's members, a str subclass)
        return value
    if kind is tuple:
        return tuple(fresh(item) for item in value)  # type: ignore[attr-defined, return-value]
    return copy.deepcopy(value)


def _model(value: BaseModel) -> BaseModel:
    """What pydantic's ``__copy__`` does, with each field's value made fresh."""
    cls = type(value)
    clone = cls.__new__(cls)
    _set(clone, "__dict__", {k: v if type(v) in _LEAVES else fresh(v) for k, v in value.__dict__.items()})
    _set(clone, "__pydantic_fields_set__", set(value.__pydantic_fields_set__))
    extra, private = value.__pydantic_extra__, value.__pydantic_private__
    _set(clone, "__pydantic_extra__", None if extra is None else fresh(extra))
    _set(clone, "__pydantic_private__", None if private is None else fresh(private))
    return clone


_set = object.__setattr__  # pydantic models refuse setattr of their own slots


class QueryCache(Generic[T]):
    def __init__(
        self,
        *,
        ttl_seconds: float = limits.QUERY_CACHE_SECONDS,
        max_entries: int = 1024,
        copy: Callable[[T], T] | None = fresh,
    ) -> None:
        self.ttl = timedelta(seconds=ttl_seconds)
        self.max_entries = max_entries
        self._copy = copy or (lambda value: value)
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[datetime, T]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, now: datetime) -> T | None:
        """A copy of the entry for ``key``, None if there is none or it is too old."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or now - entry[0] >= self.ttl or now < entry[0]:
                self._entries.pop(key, None)
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        return self._copy(entry[1])

    def put(self, key: Hashable, value: T, now: datetime) -> None:
        """Keep a copy of ``value`` (the caller keeps the original)."""
        if self.max_entries <= 0:
            return
        kept = self._copy(value)
        with self._lock:
            self._entries[key] = (now, kept)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
