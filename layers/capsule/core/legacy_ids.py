"""The Vector Bridge's integer ids, still naming what was imported from its database.

An agent that remembers ``chunk_id: 123`` or ``solution_id=16`` from before an import must reach
the same memory or solution after it (COMPAT §6). Our ids are strings unique across tenants (the
stores hold one id index for all of them), so ``123`` itself cannot be the id. Instead the
importer gives document 123 of a tenant's Vector Bridge database the id
:func:`vector_bridge_memory` derives from (tenant, 123), and solution 16 the id
:func:`vector_bridge_solution` derives; a lookup given a number (a JSON integer or a digit
string) that is not itself an id tries the derived one. Deterministic, so a re-import finds
what it wrote, and no table beside the stores' own is needed to keep the mapping.

One Vector Bridge database per tenant keeps all its ids: a second database's document 123 finds
the first's in its place, and the importer gives it another id and says so in its report.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, Protocol

MAX_DIGITS = 19  # a PostgreSQL bigint
_DIGITS = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")


def old_number(value: Any) -> int | None:
    """The integer ``value`` names: a JSON integer (not a boolean) or a digit string; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 10**MAX_DIGITS else None
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return None


def _derived(kind: str, tenant: str, number: int) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"capsule-import:vector-bridge:{kind}:{tenant}\x1f{number}").hex


def vector_bridge_memory(tenant: str, chunk_id: int) -> str:
    """The id of the memory imported from the Vector Bridge's ``documents`` row ``chunk_id``."""
    return _derived("document", tenant, chunk_id)


def vector_bridge_solution(tenant: str, solution_id: int) -> str:
    """The id of the solution imported from the Vector Bridge's ``solutions`` row ``solution_id``."""
    return _derived("solution", tenant, solution_id)


class IdLookup(Protocol):
    def ids_with_prefix(self, tenant: str, prefix: str, *, limit: int) -> list[str]: ...


def memory_id(store: IdLookup, tenant: str, text: str | int) -> str:
    """The memory id ``text`` names: itself, unless it is a number that is no memory's id while an
    imported Vector Bridge chunk of that number is here (then that memory's id). Forgotten
    memories count, so restore takes an old number too. Costs a read only for a number."""
    number = old_number(text)
    text = str(text)
    if number is None or _exists(store, tenant, text):
        return text
    derived = vector_bridge_memory(tenant, number)
    return derived if _exists(store, tenant, derived) else text


def _exists(store: IdLookup, tenant: str, memory_id: str) -> bool:
    # The id itself sorts first among the ids it is a prefix of.
    return store.ids_with_prefix(tenant, memory_id, limit=1) == [memory_id]


__all__ = ["MAX_DIGITS", "memory_id", "old_number", "vector_bridge_memory", "vector_bridge_solution"]
