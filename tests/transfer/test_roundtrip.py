"""Export -> import into a fresh store -> export again gives the same lines (the header's
``exported_at`` aside), on SQLite and on MongoDB (mongomock); a second import writes nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from capsule.core.errors import InvalidInput, NotFound
from capsule.transfer import export_lines, import_lines

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "learning"))
from learning_helpers import fixpack  # noqa: E402


def populate(d) -> dict[str, str]:
    """One of every kind of row: pinned, forgotten, evicted, voted-on, pending, solutions, patterns."""
    ids = {}
    d.memories.set_retention_limit("t", "app", {"retention_limit": 3})
    for n in range(4):  # one more than the limit: the oldest is evicted (and audited)
        d.clock.advance(minutes=5)
        ids[f"m{n}"] = d.memories.store_memory(
            "t",
            {
                "project": "app",
                "content": f"memory number {n} about redis",
                "meta": {"component": "api", "tags": ["redis"]},
            },
        ).memory.id
    d.clock.advance(minutes=5)
    ids["pinned"] = d.memories.store_memory(
        "t", {"project": "other", "content": "pin me", "pinned": True, "explanation": "kept for ever"}
    ).memory.id
    d.memories.feedback("t", ids["m3"], {"helpful": True, "context": "solved it"})
    d.memories.feedback("t", ids["m3"], {"helpful": False})
    d.clock.advance(minutes=5)
    d.memories.forget("t", ids["m2"], {"reason": "wrong"})
    d.embedder.down = True
    ids["pending"] = d.memories.store_memory("t", {"project": "other", "content": "stored while down"}).memory.id
    d.embedder.down = False
    d.memories.store_memory("u", {"project": "app", "content": "another tenant's"})
    solution = d.learning.create_solution("t", fixpack()).solution.id
    d.learning.solution_apply("t", solution, {"success": True})
    d.learning.pattern_link(
        "t", {"tag": "redis-refused", "category": "network", "solution_id": solution, "success": True}
    )
    return ids


def export_text(d, tenant="t", project=None) -> list[str]:
    return list(export_lines(d.sources, tenant, project, clock=d.clock))


def without_header(lines: list[str]) -> list[str]:
    return lines[1:]


def test_export_then_import_into_a_fresh_store_exports_the_same_lines(make):
    first = make()
    populate(first)
    exported = export_text(first)
    kinds = {json.loads(line)["kind"] for line in exported}
    assert {"header", "project", "memory", "feedback", "audit", "solution", "application", "link", "end"} <= kinds

    second = make()
    result = import_lines(second.sources, "t", exported)
    assert result.refused_total == 0 and result.complete, result.explanation
    assert result.imported["memory"] == 6 and result.imported["feedback"] == 2
    assert without_header(export_text(second)) == without_header(exported)


def test_the_import_keeps_what_the_memories_were(make):
    first, second = make(), make()
    ids = populate(first)
    import_lines(second.sources, "t", export_text(first))
    store = second.store
    assert store.get("t", ids["pinned"]).pinned
    forgotten = store.get("t", ids["m2"], include_forgotten=True)
    assert forgotten.deleted_at is not None and forgotten.deleted_reason == "forgotten"
    assert store.get("t", ids["m3"]).helpful == 1 and store.get("t", ids["m3"]).unhelpful == 1
    assert store.get("t", ids["pending"]).status == "pending_embedding"
    assert store.retention_limit("t", "app") == 3
    hits = second.memories.search("t", {"project": "app", "query": "memory number 3 redis"}).results
    assert hits and hits[0].id == ids["m3"]


def test_a_second_import_writes_nothing_twice(make):
    first, second = make(), make()
    populate(first)
    exported = export_text(first)
    import_lines(second.sources, "t", exported)
    again = import_lines(second.sources, "t", exported)
    assert sum(again.imported.values()) == 0, again.explanation
    assert again.skipped["memory"] == 6 and again.skipped["feedback"] == 2 and again.skipped["solution"] == 1
    assert without_header(export_text(second)) == without_header(exported)


def test_a_project_export_holds_only_that_project(make):
    first = make()
    ids = populate(first)
    rows = [json.loads(line) for line in export_text(first, project="other")]
    memories = {row["id"] for row in rows if row["kind"] == "memory"}
    assert memories == {ids["pinned"], ids["pending"]}
    assert [row["name"] for row in rows if row["kind"] == "project"] == ["other"]
    assert all(row["project"] == "other" for row in rows if row["kind"] == "audit")


def test_another_tenant_is_never_exported(make):
    first = make()
    populate(first)
    assert "another tenant's" not in "".join(export_text(first))


def test_forgotten_memories_carry_their_purge_date(make):
    first = make()
    ids = populate(first)
    row = next(json.loads(x) for x in export_text(first) if ids["m2"] in x and '"kind":"memory"' in x)
    assert row["deleted_at"] and row["purge_after"] > row["deleted_at"]


def test_a_bad_row_is_refused_with_its_line_and_field_and_the_rest_imports(make):
    first, second = make(), make()
    populate(first)
    lines = export_text(first)
    at = next(i for i, line in enumerate(lines) if '"kind":"memory"' in line)
    bad = json.loads(lines[at])
    bad["pinnned"] = True
    lines[at] = json.dumps(bad) + "\n"
    typed = json.loads(lines[at + 1])
    typed["helpful"] = "3"  # a string is not coerced
    lines[at + 1] = json.dumps(typed) + "\n"
    result = import_lines(second.sources, "t", lines)
    assert [(r.line, r.field) for r in result.refused] == [(at + 1, "pinnned"), (at + 2, "helpful")]
    assert "did you mean 'pinned'" in result.refused[0].message
    assert result.imported["memory"] == 4
    assert second.sources.transfer.existing_memories("t", [bad["id"], typed["id"]]) == {}


def test_a_truncated_file_imports_its_whole_rows_and_says_it_was_cut(make):
    first, second = make(), make()
    populate(first)
    text = "".join(export_text(first))
    cut = text[: text.index('"kind":"audit"') + 30]  # in the middle of the first audit line
    result = import_lines(second.sources, "t", cut.splitlines(keepends=True))
    assert not result.complete and "cut short" in result.explanation
    assert result.refused[-1].field == "row" and "not valid JSON" in result.refused[-1].message
    assert result.imported["memory"] == 6


def test_a_file_without_the_header_is_refused_whole(make):
    second = make()
    with pytest.raises(InvalidInput, match="line 1"):
        import_lines(second.sources, "t", ['{"kind": "project", "name": "x", "retention_limit": null}\n'])
    with pytest.raises(InvalidInput, match="version"):
        import_lines(
            second.sources,
            "t",
            [
                '{"kind":"header","format":"capsule-memory-export","version":3,'
                '"tenant":"t","project":null,"exported_at":"2026-01-01T00:00:00Z"}\n'
            ],
        )
    assert second.store.projects("t") == []


def test_a_vector_of_the_wrong_size_is_refused(make):
    first, second = make(), make()
    populate(first)
    lines = export_text(first)
    at = next(i for i, line in enumerate(lines) if '"kind":"memory"' in line)
    row = json.loads(lines[at])
    row["dims"] = row["dims"] + 1
    lines[at] = json.dumps(row) + "\n"
    result = import_lines(second.sources, "t", lines)
    assert result.refused[0].line == at + 1 and "dims" in result.refused[0].message


def test_the_import_lands_in_the_callers_tenant(make):
    first, second = make(), make()
    populate(first)
    import_lines(second.sources, "v", export_text(first))
    assert {p.project for p in second.store.projects("v")} == {"app", "other"}
    assert second.store.projects("t") == []


def test_an_export_resumed_from_each_position_gives_the_same_lines(make):
    from capsule.transfer.export import Position, export_chunks

    first = make()
    populate(first)
    whole = list(export_lines(first.sources, "t", clock=first.clock, page=2))
    resumed, position = [], None
    while True:  # one chunk per call, each call going on from the position the last returned
        chunks = export_chunks(first.sources, "t", start=position, clock=first.clock, page=2)
        position, lines = next(chunks)
        resumed += lines
        if lines and json.loads(lines[-1])["kind"] == "end":
            break
        position = Position.decode(position.encode(), None)
    assert resumed == whole


def test_a_cursor_not_made_by_an_export_is_refused(make):
    from capsule.transfer.export import Position

    with pytest.raises(NotFound, match="cursor"):  # it names no page of any export
        Position.decode("bm90IGEgY3Vyc29y", None)
    good = Position(project="a", section=1, after="5", counts={}).encode()
    with pytest.raises(InvalidInput, match="another project"):
        Position.decode(good, "b")
    first = make()
    bad = Position(project=None, section=1, after="not-a-key", counts={})
    from capsule.transfer.export import export_chunks

    with pytest.raises(InvalidInput, match="position"):
        list(export_chunks(first.sources, "t", start=bad))


def test_a_copy_into_another_tenant_of_the_same_store_keeps_every_row(make):
    first = make()
    populate(first)
    exported = export_text(first)
    result = import_lines(first.sources, "v", exported)
    assert result.refused_total == 0, result.explanation
    assert result.imported["memory"] == 6 and result.imported["feedback"] == 2 and result.imported["audit"] == 2
    again = import_lines(first.sources, "v", exported)
    assert sum(again.imported.values()) == 0, again.explanation
    copy = [json.loads(line) for line in export_text(first, tenant="v")]
    assert sum(row["kind"] == "memory" for row in copy) == 6


def test_a_line_given_twice_is_imported_once(make):
    first, second = make(), make()
    populate(first)
    lines = export_text(first)
    at = next(i for i, line in enumerate(lines) if '"kind":"memory"' in line)
    lines.insert(at + 1, lines[at])
    result = import_lines(second.sources, "t", lines)
    assert result.imported["memory"] == 6 and result.skipped == {"memory": 1}, result.explanation


@pytest.mark.parametrize(
    "field, value, says",
    [
        (
            "content",
            "x" * (64 * 1024 + 1),
            "65536",
        ),  # the limit, as the schema's maxLength or the UTF-8 size check says it
        ("meta", {"$where": 1}, "not allowed"),
        ("project", "", "at least 1"),
        ("occurred_at", "yesterday", "datetime"),
        ("embedding", "not base64!", "base64"),
    ],
)
def test_a_memory_row_keeps_the_rules_a_stored_memory_keeps(make, field, value, says):
    first, second = make(), make()
    populate(first)
    lines = export_text(first)
    at = next(i for i, line in enumerate(lines) if '"kind":"memory"' in line)
    row = json.loads(lines[at])
    row[field] = value
    lines[at] = json.dumps(row) + "\n"
    result = import_lines(second.sources, "t", lines)
    assert result.refused[0].line == at + 1 and says in result.refused[0].message, result.refused
    assert result.refused[0].field in (field, "row")
