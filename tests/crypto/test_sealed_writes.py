"""Every store write that takes memories goes through SealedStore's sealing: a method the
wrapper does not define is passed through ``__getattr__`` unsealed, so a new one on the store
contract (insert_bulk was one) would write plaintext."""

from __future__ import annotations

import inspect

from capsule.sealing.sealedstore import SealedStore
from capsule.store.base import MemoryStore


def test_every_contract_write_of_memories_is_sealed_by_the_wrapper():
    writes = [
        name
        for name, member in inspect.getmembers(MemoryStore, inspect.isfunction)
        if any(
            "MemoryRecord" in str(p.annotation) and "Sequence" in str(p.annotation)
            for p in inspect.signature(member).parameters.values()
        )
    ]
    assert {"insert", "insert_bulk"} <= set(writes)
    assert [name for name in writes if name not in vars(SealedStore)] == []
