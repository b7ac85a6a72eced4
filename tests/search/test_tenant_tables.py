"""A tenant's postings table kept on disk beside the index snapshots (capsule.search.tenanttables):
written once every index in it holds a snapshot's postings, mapped by the next process instead
of sorted again, with the same answers as the per-project path; an index changed since is read
from its own postings, and a table that does not fit (other snapshots, unreadable files) is
sorted anew. Real SQLite stores and services over a temporary folder; no timing is asserted."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from capsule.config import Settings
from capsule.core.records import Filters, MemoryRecord
from capsule.search import tenantpostings
from capsule.search.hybrid import search_indexes
from capsule.search.tenantpostings import PostingsTable
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from capsule_cli.bench_data import TableEmbedder, make_dataset

PROJECTS, PER, DIM, QUERIES = 5, 300, 64, 12
MODEL = f"bench-{DIM}"
BASE = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def data():
    return make_dataset(PROJECTS * PER, DIM, QUERIES, seed=11)


def record(data, i: int, project: str, **changes) -> MemoryRecord:
    at = BASE + timedelta(hours=i)
    made = MemoryRecord(
        id=f"m{i:07d}",
        tenant="t",
        project=project,
        content=data.texts[i],
        sha256=f"{i:064x}",
        occurred_at=at,
        created_at=at,
        updated_at=at,
        embedding=data.vectors[i].copy(),
        model=MODEL,
    )
    return replace(made, **changes)


def service_over(folder, data) -> MemoryService:
    table = dict(zip(data.query_texts, data.queries))
    table["zebra"] = data.queries[0]
    settings = Settings(data_dir=folder, query_cache_entries=0, index_snapshot_min=1)
    return MemoryService(SQLiteStore(folder / "g.db"), TableEmbedder(table, DIM), settings=settings)


@pytest.fixture()
def folder(tmp_path, data):
    store = SQLiteStore(tmp_path / "g.db")
    store.migrate()
    for p in range(PROJECTS):
        rows = [record(data, i, f"p{p}") for i in range(p, PROJECTS * PER, PROJECTS)]
        store.insert(rows, limit=10_000, dedupe_after=None, actor="test")
    store.close()
    return tmp_path


def global_ids(service: MemoryService, text: str) -> list[str]:
    return [h.id for h in service.search("t", {"global": True, "query": text, "k": 10}).results]


def per_project_ids(service: MemoryService, text: str, vector: np.ndarray) -> list[str]:
    indexes = [service.indexes.get("t", f"p{p}", MODEL) for p in range(PROJECTS)]
    hits, _ = search_indexes(
        indexes,
        filters=Filters(),
        query=text,
        query_vector=vector,
        model_id=MODEL,
        now=service.clock(),
        weights=service.settings.weights,
        k=10,
    )
    return [h.record.id for h in hits]


def table_files(folder) -> list[str]:
    return sorted(p.name for p in (folder / "index").glob("*.tenant.*"))


def first_service(folder, data) -> list[str]:
    """A process that builds every index from the store (and their snapshots), searches, and
    keeps the table; its answers."""
    service = service_over(folder, data)
    try:
        answers = [global_ids(service, data.query_texts[q]) for q in range(QUERIES)]
        service.settle()  # the table is written beside the searches
    finally:
        service.store.close()
    return answers


def test_a_fresh_process_maps_the_kept_table_with_the_same_answers(folder, data, monkeypatch):
    before = first_service(folder, data)
    assert len(list((folder / "index").glob("*.tenant.postings"))) == 1 and len(table_files(folder)) == 6  # + 5 arrays

    def no_sorting(*args, **kwargs):
        raise AssertionError("a kept table is mapped, not sorted again")

    monkeypatch.setattr(PostingsTable, "of_parts", no_sorting)
    service = service_over(folder, data)
    try:
        answers = [global_ids(service, data.query_texts[q]) for q in range(QUERIES)]
        postings = service._tenant_codes._columns.postings
        assert postings.stale == () and postings.table is service._tenant_codes._on_disk
        assert not postings.table.owner.flags.owndata  # over the file's mapping
        assert answers == before
        assert answers == [per_project_ids(service, data.query_texts[q], data.queries[q]) for q in range(QUERIES)]
        service.settle()
        assert len(table_files(folder)) == 6  # not written again
    finally:
        service.store.close()


def test_an_index_changed_since_its_snapshot_is_read_on_its_own(folder, data, monkeypatch):
    first_service(folder, data)
    service = service_over(folder, data)
    try:
        global_ids(service, data.query_texts[0])
        table = service._tenant_codes._columns.postings.table
        # A write the kept table does not hold: its index no longer names its snapshot's file.
        fact = data.query_texts[0] + " zebra"
        service.store.insert(
            [record(data, 0, "p2", id="new-fact", content=fact, sha256="f" * 64, embedding=data.queries[0].copy())],
            limit=10_000,
            dedupe_after=None,
            actor="t",
        )
        found = global_ids(service, "zebra")
        postings = service._tenant_codes._columns.postings
        assert postings.table is table and postings.stale == (2,)
        assert found[0] == "new-fact"  # by keyword, through index p2's own postings
        for q in range(QUERIES):
            assert global_ids(service, data.query_texts[q]) == per_project_ids(
                service, data.query_texts[q], data.queries[q]
            )
    finally:
        service.store.close()


def test_a_table_of_other_snapshots_is_sorted_again_and_replaced(folder, data):
    before = first_service(folder, data)
    old = table_files(folder)
    for snapshot in (folder / "index").glob("*.snapshot"):
        snapshot.unlink()  # the next process builds every index from the store: new snapshots
    service = service_over(folder, data)
    try:
        assert global_ids(service, data.query_texts[0]) == before[0]
        postings = service._tenant_codes._columns.postings
        assert postings.stale == () and postings.table.owner.flags.owndata  # none of its places: sorted here
        service.settle()
    finally:
        service.store.close()
    new = table_files(folder)
    assert len(new) == 6 and set(new) & set(old) == {n for n in old if n.endswith(".postings")}  # arrays replaced
    fresh = service_over(folder, data)
    try:
        assert [global_ids(fresh, data.query_texts[q]) for q in range(QUERIES)] == before
        assert fresh._tenant_codes._columns.postings.table is fresh._tenant_codes._on_disk
    finally:
        fresh.store.close()


@pytest.mark.parametrize("damage", ["pickle", "array", "sizes"])
def test_an_unreadable_table_is_ignored_and_sorted_again(folder, data, damage, caplog):
    before = first_service(folder, data)
    index_folder = folder / "index"
    pickle_file = next(index_folder.glob("*.tenant.postings"))
    if damage == "pickle":
        pickle_file.write_bytes(b"not a pickle")
    elif damage == "array":
        next(index_folder.glob("*.tenant.*.owner.npy")).write_bytes(b"not an array")
    else:
        np.save(next(index_folder.glob("*.tenant.*.counts.npy")), np.zeros(3, dtype=np.float32))
    service = service_over(folder, data)
    try:
        with caplog.at_level(logging.WARNING, logger="capsule.search.snapshot"):
            answers = [global_ids(service, data.query_texts[q]) for q in range(QUERIES)]
        assert "postings table" in caplog.text
        assert answers == before
        postings = service._tenant_codes._columns.postings
        assert postings.stale == () and postings.table.owner.flags.owndata  # sorted in this process
        service.settle()
    finally:
        service.store.close()
    fresh = service_over(folder, data)  # the table sorted again was written in its place
    try:
        assert [global_ids(fresh, data.query_texts[q]) for q in range(QUERIES)] == before
        assert fresh._tenant_codes._columns.postings.table is fresh._tenant_codes._on_disk
    finally:
        fresh.store.close()


def test_a_table_with_an_index_not_in_a_snapshot_is_not_kept(tmp_path):
    from capsule.search.tenanttables import TenantTables

    one = (np.array([3, 7]), np.array([0, 1], dtype=np.int32), np.array([1, 2], dtype=np.float32))
    tables = TenantTables(tmp_path, "store")
    mixed = PostingsTable.of_parts([(("file", "a.npy"), one), ((4, 1), one)])
    assert not mixed.named_by_files() and not tables.save("t", MODEL, mixed)
    assert tables.load("t", MODEL) is None and not list(tmp_path.iterdir())
    named = PostingsTable.of_parts([(("file", "a.npy"), one), (("file", "b.npy"), one)])
    assert tables.save("t", MODEL, named)
    loaded = tables.load("t", MODEL)
    assert loaded.places == named.places
    for name in ("terms", "offsets", "owner", "local", "counts"):
        assert np.array_equal(getattr(loaded, name), getattr(named, name))
    assert tables.load("other tenant", MODEL) is None and tables.load("t", "other model") is None
    assert TenantTables(tmp_path, "another store").load("t", MODEL) is None


def test_a_kept_table_of_no_index_now_leaves_a_large_tenants_sort_beside_the_searches(folder, data, monkeypatch):
    """Every project written to since its snapshot: the kept table holds none of them as they
    are, and is no better than none. A large tenant's table is then sorted beside the searches
    (as a first table is), never on a search's path, and not kept on disk (its places are no
    snapshot's files)."""
    first_service(folder, data)
    old = table_files(folder)
    store = SQLiteStore(folder / "g.db")
    for p in range(PROJECTS):
        store.insert(
            [record(data, p, f"p{p}", id=f"late-{p}", sha256=f"{p:063x}e")], limit=10_000, dedupe_after=None, actor="t"
        )
    store.close()
    monkeypatch.setattr(tenantpostings, "SORT_BESIDE_FROM", 1)

    def not_on_the_search_path(*args, **kwargs):
        raise AssertionError("a large tenant's table is sorted beside the searches")

    monkeypatch.setattr(PostingsTable, "of", not_on_the_search_path)
    service = service_over(folder, data)
    try:
        answers = [global_ids(service, data.query_texts[0])]
        postings = service._tenant_codes._columns.postings  # (the next search may take the sorted one)
        assert not postings.table.places and postings.stale == tuple(range(PROJECTS))
        answers += [global_ids(service, data.query_texts[q]) for q in range(1, QUERIES)]
        service.settle()  # the sort beside the searches
        again = [global_ids(service, data.query_texts[q]) for q in range(QUERIES)]
        postings = service._tenant_codes._columns.postings
        assert len(postings.table.places) == PROJECTS and postings.stale == ()
        expected = [per_project_ids(service, data.query_texts[q], data.queries[q]) for q in range(QUERIES)]
        assert answers == again == expected
        service.settle()
    finally:
        service.store.close()
    assert table_files(folder) == old
