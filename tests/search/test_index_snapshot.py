"""Index snapshots: a fresh process starts from the saved index plus what changed since."""

from __future__ import annotations

import random
from datetime import UTC

from capsule.search import snapshot
from capsule.search.index import ProjectIndex

WORDS = "deploy redis worker timeout mongo gateway cache retry queue schema lambda build".split()
QUERIES = ["redis timeout", "gateway cache", "schema retry queue"]


def fill(service, count, seed=0):
    rng = random.Random(seed)
    return [
        service.store_memory(
            "t", {"project": "p", "content": " ".join(rng.choice(WORDS) for _ in range(6)) + f" {seed}-{i}"}
        ).memory.id
        for i in range(count)
    ]


def answers(service):
    return [service.search("t", {"project": "p", "query": q, "k": 10}) for q in QUERIES]


def test_a_fresh_process_loads_the_snapshot_then_the_changes(make_service, db_path):
    first = make_service(index_snapshot_min=10)
    ids = fill(first, 30)
    answers(first)  # a full load: the snapshot is written
    snapshots = list((db_path.parent / "index").glob("*.snapshot"))
    assert len(snapshots) == 1
    writer = make_service(index_snapshot_min=0)
    fill(writer, 5, seed=1)
    writer.forget("t", ids[0])
    writer.feedback("t", ids[1], {"helpful": True})
    fresh = make_service(index_snapshot_min=10)
    probe = ProjectIndex("t", "p", fresh.embedder.model_id)
    assert fresh.snapshots.load(probe) and probe.active == 30  # what the snapshot holds
    assert answers(fresh) == answers(make_service(index_snapshot_min=0))
    assert fresh.indexes.get("t", "p", fresh.embedder.model_id).active == 34


def test_small_projects_and_unreadable_snapshots(make_service, db_path):
    small = make_service(index_snapshot_min=100)
    fill(small, 20)
    answers(small)
    assert not (db_path.parent / "index").exists()
    big = make_service(index_snapshot_min=10)
    answers(big)
    (snapshot,) = (db_path.parent / "index").glob("*.snapshot")
    snapshot.write_bytes(b"not a pickle")
    assert answers(make_service(index_snapshot_min=10)) == answers(make_service(index_snapshot_min=0))


def test_a_snapshot_of_another_database_is_never_used(make_service, tmp_path):
    from capsule.search.snapshot import Snapshots

    service = make_service(index_snapshot_min=10)
    fill(service, 12)
    answers(service)
    index = service.indexes.get("t", "p", service.embedder.model_id)
    other = Snapshots(service.snapshots.folder, "another-database", min_rows=10)
    assert not other.load(ProjectIndex("t", "p", service.embedder.model_id))
    assert service.snapshots.load(ProjectIndex("t", "p", service.embedder.model_id))
    assert not service.snapshots.load(ProjectIndex("t", "p", "another-model"))
    assert index.version > 0


def test_records_pack_and_unpack_whole():
    from datetime import datetime

    from capsule.core.records import MemoryRecord
    from capsule.search.index import pack, unpack

    at = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    record = MemoryRecord(
        id="m",
        tenant="t",
        project="p",
        content="c",
        sha256="s",
        occurred_at=at,
        created_at=at,
        updated_at=at,
        path="a/b.py",
        chunk_index=1,
        chunk_count=3,
        model="m1",
        pinned=True,
        explanation="why",
        meta={"tags": ["x"], "author": "Ana"},
        helpful=2,
        unhelpful=1,
        accessed_at=at,
        status="ready",
    )
    assert unpack(pack(record)) == record


def test_a_snapshot_made_by_another_tokenizer_is_never_used(make_service, db_path):
    import pickle

    service = make_service(index_snapshot_min=10)
    fill(service, 12)
    answers(service)
    (path,) = (db_path.parent / "index").glob("*.snapshot")
    assert service.snapshots.load(ProjectIndex("t", "p", service.embedder.model_id))
    with path.open("rb") as handle:
        state, records = pickle.load(handle), pickle.load(handle)
    state["tokenizer"] = "an-older-tokenizer"  # its postings hash terms another tokenizer made
    path.write_bytes(pickle.dumps(state) + pickle.dumps(records))
    assert not service.snapshots.load(ProjectIndex("t", "p", service.embedder.model_id))
    state["tokenizer"] = snapshot.terms.TOKENIZER
    path.write_bytes(pickle.dumps(state) + pickle.dumps(records))
    assert service.snapshots.load(ProjectIndex("t", "p", service.embedder.model_id))  # only the tokenizer differed


def test_a_snapshot_of_a_column_loaded_index_fetches_its_records(make_service, db_path):
    first = make_service(index_snapshot_min=10)
    fill(first, 30)
    answers(first)
    index = first.indexes.get("t", "p", first.embedder.model_id)
    fresh = make_service(index_snapshot_min=10)
    probe = ProjectIndex("t", "p", fresh.embedder.model_id, fresh.indexes.fetch)
    assert fresh.snapshots.load(probe) and probe.records.ids() == index.records.ids()
    assert probe.records[0].content == index.records[0].content


def test_beyond_the_budget_of_records_in_ram_an_index_holds_ids(make_service, db_path):
    """Many projects searched at once: the first ones' records are read whole from their
    snapshots, the rest as ids (their hits read from the store), with the same answers."""
    writer = make_service(index_snapshot_min=10)
    for project in ("a", "b", "c"):
        rng = random.Random(project)
        for i in range(40):
            writer.store_memory(
                "t", {"project": project, "content": " ".join(rng.choice(WORDS) for _ in range(6)) + f" {project}-{i}"}
            )
    search = {"global": True, "query": "redis timeout cache", "k": 10}
    expected = writer.search("t", search)  # every index loaded whole, its snapshot written
    writer.settle()
    assert len(list((db_path.parent / "index").glob("*.snapshot"))) == 3
    fresh = make_service(index_snapshot_min=10, records_in_ram=50)
    found = fresh.search("t", search)
    held = {p: fresh.indexes.get("t", p, fresh.embedder.model_id).records.held for p in ("a", "b", "c")}
    assert held == {"a": 40, "b": 0, "c": 0}  # a fits in 50; b would make 80
    assert [(h.id, h.content, h.score) for h in found.results] == [(h.id, h.content, h.score) for h in expected.results]
    assert {h.project for h in found.results} == {"a", "b", "c"}  # ids-only indexes returned hits
    everything = make_service(index_snapshot_min=10)
    everything.search("t", search)
    assert sum(everything.indexes.get("t", p, everything.embedder.model_id).records.held for p in "abc") == 120


def test_beyond_the_budget_a_load_from_the_store_keeps_ids(make_service):
    writer = make_service(index_snapshot_min=0)
    for project, word in (("a", "alpha"), ("b", "beta")):
        for i in range(30):
            writer.store_memory("t", {"project": project, "content": f"gateway cache {word} {i}"})
    fresh = make_service(index_snapshot_min=0, records_in_ram=40)
    found = fresh.search("t", {"global": True, "query": "gateway beta", "k": 20})
    held = [fresh.indexes.get("t", p, fresh.embedder.model_id).records.held for p in ("a", "b")]
    assert held == [30, 0]  # a fits in 40, b would make 60: b holds ids
    assert len(found.results) == 20 and all(h.project == "b" and "beta" in h.content for h in found.results)
    assert found.results == writer.search("t", {"global": True, "query": "gateway beta", "k": 20}).results


def test_a_global_search_reads_the_records_of_every_projects_hits_at_once(make_service, db_path):
    """Indexes of ids only (beyond the budget): a global search's hits, spread over its
    projects, are read from the store in one read, not one per project (at 1M memories over
    100 projects, 5-7 ms a search), with the same answers as indexes holding whole records."""
    writer = make_service(index_snapshot_min=10)
    for project in ("a", "b", "c", "d"):
        rng = random.Random(project)
        for i in range(30):
            writer.store_memory(
                "t", {"project": project, "content": " ".join(rng.choice(WORDS) for _ in range(6)) + f" {project}-{i}"}
            )
    searches = [
        {"global": True, "query": query, "k": 12}
        for query in ("redis timeout cache", "deploy worker", "gateway retry queue")
    ]
    expected = [writer.search("t", search) for search in searches]
    writer.settle()
    fresh = make_service(index_snapshot_min=10, records_in_ram=0)
    reads = []
    real = fresh.store.get_many
    fresh.store.get_many = lambda tenant, ids: reads.append(sorted(ids)) or real(tenant, ids)
    for turn, (search, want) in enumerate(zip(searches, expected)):
        reads.clear()
        found = fresh.search("t", search)
        assert [(h.id, h.content, h.score) for h in found.results] == [(h.id, h.content, h.score) for h in want.results]
        assert len({h.project for h in found.results}) > 1
        hits = sorted(h.id for h in found.results)
        if turn == 0:
            assert reads == [hits]  # one read, of the hits
        else:  # one read at most, of the hits not read by an earlier search
            assert len(reads) <= 1 and set(*reads) <= set(hits)
