"""Short ids: the first characters of a memory id, as ``capsule search`` prints them (12).

A prefix names a memory when exactly one of the caller's memories (forgotten ones included,
so ``restore`` takes one too) has an id starting with it. An id that exists whole is always
itself, however short (imported ids such as ``16``); a number that is no id but a Vector
Bridge ``chunk_id`` imported here names that memory (:mod:`capsule.core.legacy_ids`). Below
:data:`MIN_PREFIX` characters a prefix is not looked up: with random 32-hex-digit ids, 8 digits
leave one chance in 4 billion that two memories share it, so a short id typed today still names
the same memory tomorrow.
"""

from __future__ import annotations

from typing import Protocol

from . import legacy_ids
from .errors import InvalidInput, NotFound

MIN_PREFIX = 8
SHOWN = 5  # candidates named when a prefix is ambiguous


class IdLookup(Protocol):
    def ids_with_prefix(self, tenant: str, prefix: str, *, limit: int) -> list[str]: ...


def resolve(store: IdLookup, tenant: str, text: str) -> str:
    """The whole id ``text`` names; NotFound when none, InvalidInput (listing them) when several."""
    found = store.ids_with_prefix(tenant, text, limit=SHOWN + 1) if text else []
    if text in found:
        return text
    imported = legacy_ids.memory_id(store, tenant, text)
    if imported != text:
        return imported  # a Vector Bridge chunk_id from before its database was imported
    if len(text) < MIN_PREFIX:
        raise NotFound(f"no memory {text} (a short id needs at least {MIN_PREFIX} characters)")
    if not found:
        raise NotFound(f"no memory {text}")
    if len(found) > 1:
        more = ", ..." if len(found) > SHOWN else ""
        raise InvalidInput(
            f"the id prefix {text} matches several memories: {', '.join(found[:SHOWN])}{more}; give more characters",
            field="id",
        )
    return found[0]


__all__ = ["MIN_PREFIX", "resolve"]
