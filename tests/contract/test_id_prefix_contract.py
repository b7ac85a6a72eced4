"""Short ids (``capsule pin c7a450e022de``): every store finds the ids a prefix starts, and
capsule.core.idprefix turns a prefix into the one id it names, or a clear error."""

from __future__ import annotations

import pytest
from test_store_contract import T0, put, rec  # beside this file (rootdir-relative import)

from capsule.core import idprefix
from capsule.core.errors import InvalidInput, NotFound


def test_ids_with_prefix_is_the_tenants_ids_starting_with_it_forgotten_too(store):
    ids = [
        "c7a450e022de11112222333344445555",
        "c7a450e0ffff00001111222233334444",
        "d0000000000000000000000000000000",
        "c7a450e_",
        "C7A450E022DE",
    ]
    put(store, *[rec(f"memory {n}", id=memory_id) for n, memory_id in enumerate(ids)])
    put(store, rec("another tenant's", tenant="t2", id="c7a450e022de99998888777766665555"))
    store.forget("t1", ids[1], at=T0, actor="tester", reason="stale")
    assert store.ids_with_prefix("t1", "c7a450e0", limit=10) == sorted(ids[:2])
    assert store.ids_with_prefix("t1", "c7a450e022de", limit=10) == [ids[0]]  # case-sensitive, its own tenant
    assert store.ids_with_prefix("t1", "c7a450e_", limit=10) == ["c7a450e_"]  # '_' is no wildcard
    assert store.ids_with_prefix("t1", "c7a4", limit=1) == [ids[0]]
    assert store.ids_with_prefix("t1", "e", limit=10) == []


def test_resolve_takes_a_unique_prefix_and_names_the_candidates_of_an_ambiguous_one(store):
    one, two = "c7a450e022de11112222333344445555", "c7a450e0ffff00001111222233334444"
    put(store, rec("first", id=one), rec("second", id=two), rec("imported", id="16"))
    assert idprefix.resolve(store, "t1", one[:12]) == one
    assert idprefix.resolve(store, "t1", one) == one
    assert idprefix.resolve(store, "t1", "16") == "16"  # a whole id is itself, however short
    with pytest.raises(InvalidInput) as ambiguous:
        idprefix.resolve(store, "t1", one[:8])
    assert one in ambiguous.value.message and two in ambiguous.value.message
    with pytest.raises(NotFound, match="at least 8 characters"):
        idprefix.resolve(store, "t1", one[:7])
    with pytest.raises(NotFound, match="no memory ffffffffffff"):
        idprefix.resolve(store, "t1", "ffffffffffff")
    with pytest.raises(NotFound):
        idprefix.resolve(store, "t2", one[:12])  # another tenant's memory is not found
