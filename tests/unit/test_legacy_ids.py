"""capsule.core.legacy_ids: which values are an old Vector Bridge number, and how a number finds the
memory imported under it (an id that exists whole always wins)."""

from __future__ import annotations

from capsule.core import legacy_ids


class Ids:
    def __init__(self, *ids: str) -> None:
        self.ids = sorted(ids)

    def ids_with_prefix(self, tenant: str, prefix: str, *, limit: int) -> list[str]:
        return [i for i in self.ids if i.startswith(prefix)][:limit]


def test_a_number_is_a_json_integer_or_a_digit_string():
    assert [legacy_ids.old_number(v) for v in (123, "123", "0", 0)] == [123, 123, 0, 0]
    for value in (True, False, -1, "-1", "1.0", "12a", " 12", "", None, 1.0, 10**19, "1" * 20):
        assert legacy_ids.old_number(value) is None, value


def test_derived_ids_differ_by_tenant_kind_and_number_and_never_change():
    memory = legacy_ids.vector_bridge_memory("t", 123)
    assert memory == legacy_ids.vector_bridge_memory("t", 123) and len(memory) == 32
    assert (
        len(
            {
                memory,
                legacy_ids.vector_bridge_memory("u", 123),
                legacy_ids.vector_bridge_memory("t", 124),
                legacy_ids.vector_bridge_solution("t", 123),
            }
        )
        == 4
    )


def test_a_number_names_the_imported_memory_unless_it_is_an_id_itself():
    imported = legacy_ids.vector_bridge_memory("t", 7)
    store = Ids(imported, "16", "160abc")
    assert legacy_ids.memory_id(store, "t", "7") == imported
    assert legacy_ids.memory_id(store, "t", 7) == imported
    assert legacy_ids.memory_id(store, "t", "16") == "16"  # an id that exists whole is itself
    assert legacy_ids.memory_id(store, "t", "8") == "8"  # nothing imported: the store's NotFound names it
    assert legacy_ids.memory_id(store, "t", "abc") == "abc"
