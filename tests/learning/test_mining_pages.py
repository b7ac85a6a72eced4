"""Mining in bounded memory (issue 32): the tenant is read a page at a time, never whole, and
finds the same patterns and evidence as mining the whole tenant at once (the way it ran before,
kept here as the reference), on SQLite and on MongoDB (mongomock)."""

from __future__ import annotations

import itertools

import pytest
from learning_helpers import fixpack

from capsule.config import Settings
from capsule.core.clock import FrozenClock
from capsule.core.records import Filters
from capsule.embedders import HashingEmbedder
from capsule.learning import LearningService, mining, mining_pages
from capsule.learning.patterns import MAX_PATTERNS_SCANNED
from capsule.service.memory_service import MemoryService
from capsule.store.sides import open_learning_store
from capsule.store.sqlite import SQLiteStore

ERRORS = [
    "connect ECONNREFUSED 10.0.0.2:6379",
    "E11000 duplicate key error collection users email_1",
    "TypeError: cannot read properties of undefined (reading 'map') in OrderTable",
    "ENOSPC: no space left on device, write",
    "KeyError: 'customer_id' in billing.charge",
]
FIXES = [
    "Fixed ECONNREFUSED 6379: REDIS_URL uses the private host",
    "E11000: dedupe emails before the insert",
    "TypeError map undefined: default the rows to an empty list in OrderTable",
    "ENOSPC: rotate the logs",
]


def whole_tenant_mine(learning: LearningService, tenant: str) -> None:
    """Mining as it ran before issue 32: every active memory of the tenant read at once."""
    records = [r for r in learning.memories.candidates(tenant, None, Filters()) if not getattr(r, "sealed", "")]
    options = learning.mining_options
    vectors = learning._vectors(records)
    items = mining.occurrences(records, vectors, options.max_memories)
    successes = [r for r in records if mining.is_success(r)]
    applications = learning.store.applications(tenant, limit=options.max_memories)
    existing = learning.store.patterns(tenant, category=None, min_occurrences=0, limit=MAX_PATTERNS_SCANNED)
    clusters: list[mining.Cluster] = []
    for group in mining.cluster(items, options):
        if len(group) < 2:
            continue
        found = mining.describe_cluster([items[i] for i in group])
        taken = {c.tag for c in clusters if c.category == found.category}
        same = {p.tag: set(p.examples) for p in existing if p.category == found.category and p.tag not in taken}
        found.tag = mining.name(found, same, taken)
        learning._save_pattern(tenant, found, existing)
        learning._record_evidence(tenant, found, mining.evidence(found, successes, applications, vectors, options))
        clusters.append(found)


def seed(service: MemoryService, clock: FrozenClock, learning: LearningService) -> None:
    """Two tenants, four projects each; failures, fixes and notes interleaved over weeks."""
    solution = learning.create_solution("t", fixpack())
    for i in range(120):
        clock.advance(hours=5)
        for tenant in ("t", "u"):
            project = f"p{i % 4}"
            if i % 3 == 0:
                content, meta = (
                    f"{ERRORS[i % 5]} (run {i})",
                    {"type": "error", "outcome_status": "failure", "category": ["network", "db"][i % 2]},
                )
                if i % 15 == 0:
                    meta["solution_id"] = solution.solution.id
            elif i % 3 == 1:
                content, meta = f"{FIXES[i % 4]} (run {i})", {"outcome_status": "success"}
            else:
                content, meta = f"a note about the build {i}", {"type": "note"}
            service.store_memory(tenant, {"project": project, "content": content, "meta": meta})
        if i in (40, 100):
            learning.solution_apply(
                "t",
                solution.solution.id,
                {"success": i == 40, "project": "p0", "error": "connect ECONNREFUSED 10.0.0.2:6379"},
            )


def outcome(learning: LearningService, tenant: str):
    patterns = {
        (p.tag, p.category): (p.occurrences, sorted(p.examples), p.terms, p.projects)
        for p in learning.store.patterns(tenant, category=None, min_occurrences=0, limit=1000)
    }
    links = {
        (k.tag, k.category, k.kind, k.target_id): (k.success, k.failure)
        for k in learning.store.links(tenant, limit=10_000)
    }
    return patterns, links


class Watched:
    """The memory store, counting what mining reads of it."""

    def __init__(self, inner) -> None:
        self.inner, self.largest_read, self.whole_reads = inner, 0, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def list(self, *args, **kwargs):
        rows = self.inner.list(*args, **kwargs)
        self.largest_read = max(self.largest_read, len(rows))
        return rows

    def candidates(self, *args, **kwargs):
        self.whole_reads += 1
        return self.inner.candidates(*args, **kwargs)


class WatchedPages(Watched):
    """A store with its ``outcome_page`` (mining reads only a page's outcome memories whole)."""

    def outcome_page(self, *args, **kwargs):
        rows, count, last = self.inner.outcome_page(*args, **kwargs)
        self.largest_read = max(self.largest_read, count)
        return rows, count, last


def _sqlite(tmp_path):
    store = SQLiteStore(tmp_path / "capsule.db")
    store.migrate()
    return store, Settings(data_dir=tmp_path, embedder="hashing", retention_limit=100_000)


def _mongo(tmp_path):
    """mongomock (mining's reads are the store's ``list`` and ``change_markers``, whose queries the
    contract suite's strict backend checks against the declared indexes)."""
    mongomock = pytest.importorskip("mongomock")
    from capsule.store.mongo import MongoStore

    store = MongoStore(mongomock.MongoClient().get_database("capsule"), transactions=False)
    store.migrate()
    return store, Settings(store="mongo", embedder="hashing", retention_limit=100_000)


@pytest.mark.parametrize(
    ("backend", "watcher"),
    [(_sqlite, WatchedPages), (_sqlite, Watched), (_mongo, WatchedPages), (_mongo, Watched)],
    ids=["sqlite-outcome-pages", "sqlite-list", "mongo-outcome-pages", "mongo-list"],
)
def test_mining_a_page_at_a_time_finds_what_mining_the_whole_tenant_found(backend, watcher, tmp_path, monkeypatch):
    made = []
    for name in ("whole", "paged"):
        (tmp_path / name).mkdir()
        store, settings = backend(tmp_path / name)
        clock = FrozenClock()
        ids = (f"{n:032x}" for n in itertools.count())  # the same ids in both stores
        service = MemoryService(
            store, HashingEmbedder(), clock=clock, settings=settings, new_id=lambda ids=ids: next(ids)
        )
        learning = LearningService(
            open_learning_store(store, settings),
            store,
            service.embedder,
            clock=clock,
            new_id=lambda ids=ids: next(ids),
            mining_options=mining.MiningOptions(max_memories=30, window_days=3),
        )
        seed(service, clock, learning)
        made.append((store, learning))
    (_, whole), (paged_store, paged) = made
    whole_tenant_mine(whole, "t")
    monkeypatch.setattr(mining_pages, "PAGE", 7)  # many pages, split anywhere
    monkeypatch.setattr(mining_pages.pages, "__defaults__", None)
    monkeypatch.setattr(mining_pages.pages, "__kwdefaults__", {"page": 7})
    monkeypatch.setattr(mining_pages.latest_failures, "__kwdefaults__", {"page": 7})
    monkeypatch.setattr(mining_pages.successes, "__kwdefaults__", {"page": 7})
    watched = watcher(paged_store)
    paged.memories = watched
    result = paged.detect_patterns("t", {"min_occurrences": 2, "k": 100})
    assert watched.whole_reads == 0 and 0 < watched.largest_read <= 7
    assert result.scanned == 30 and result.clusters >= 3
    patterns, links = outcome(paged, "t")
    assert (patterns, links) == outcome(whole, "t")
    assert any(kind == "memory" for _, _, kind, _ in links) and any(kind == "solution" for _, _, kind, _ in links)
    assert outcome(paged, "u") == ({}, {})  # the other tenant's memories are never mined into this one
    # A second run records nothing new, paged or whole.
    assert paged.detect_patterns("t", {"min_occurrences": 2}).linked == 0
    for store, _ in made:
        store.close()
