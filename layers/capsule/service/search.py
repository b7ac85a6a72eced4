"""How :class:`~capsule.service.memory_service.MemoryService` searches: the request's weights and filters,
the projects the caller reaches, the query cache keyed by the projects' change markers, the
query's embedding, ranking over the indexes (:mod:`.service_indexes`) under their locks, one
project's (:mod:`capsule.search.hybrid`) or across projects (:mod:`capsule.search.globalsearch`), and the
answer with what each hit superseded (:mod:`capsule.search.answers`).

Search is the hot path: the steps are methods of the service itself, with no layer between.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import Settings
from ..core import limits, models
from ..core.clock import Clock
from ..core.errors import Unavailable
from ..core.records import Filters, MemoryRecord
from ..core.text import sha256
from ..embedders.base import Embedder
from ..governance.visibility import FULL, Reach
from ..search.answers import Answer, search_result, superseded_note
from ..search.globalsearch import TenantCodes, search_global
from ..search.hybrid import SearchOptions, describe, search_indexes
from ..search.index import ProjectIndex
from ..search.querycache import QueryCache
from ..search.ranking import Weights
from ..store.base import MemoryStore
from .edge import validate

if TYPE_CHECKING:
    from ..search.snapshot import Snapshots
    from .background import Background

# Query vectors kept per warm process: 4 KiB each at 1024 dimensions, so 4 MiB at most.
QUERY_VECTOR_ENTRIES = 1024


def weights_for(weights: Weights, req: models.SearchRequest) -> Weights:
    """The deployment's weights with the request's own, and the mode's zero."""
    if req.weights is not None:
        weights = weights.replace(**req.weights.model_dump())
    if req.mode == "vector":
        weights = weights.replace(bm25=0.0)
    elif req.mode == "bm25":
        weights = weights.replace(vector=0.0)
    return weights


def filters_for(f: models.SearchFilters, reach: Reach) -> Filters:
    """The request's filters, narrowed to the visibilities and subjects the caller may see."""
    return Filters(
        component=f.component,
        category=f.category,
        tags=tuple(f.tags),
        path_prefix=f.path_prefix,
        since=f.since,
        until=f.until,
        retention=f.retention,
        visibility=reach.visibilities(f.visibility),
        subjects=reach.subjects_for(f.subject),
    )


class ServiceSearch:
    # Given by MemoryService's constructor.
    store: MemoryStore
    embedder: Embedder
    clock: Clock
    settings: Settings
    history: Any  # MemoryService.history
    # ServiceIndexes
    _change_markers: Callable[[str, list[str] | None], dict[str, int] | None]
    project_of: Callable[[str, str], str]  # ServiceProjects.project_of
    _shortlist: Callable[..., list[ProjectIndex] | None]
    _indexes: Callable[..., list[ProjectIndex]]
    snapshots: Snapshots | None
    background: Background  # ServiceIndexes.background

    def _setup_search(self) -> None:
        # Answers are kept as they are: nothing changes one, each caller gets models of its own.
        self.query_cache: QueryCache[Answer] = QueryCache(max_entries=self.settings.query_cache_entries, copy=None)
        # A global search's first-pass codes and postings, until an index changes (the postings
        # sorted again beside the searches, on the index thread, once many changed); the postings
        # table kept beside the index snapshots, for the next process.
        self._tenant_codes = TenantCodes(self.background.submit, tables=lambda: getattr(self.snapshots, "tables", None))
        self._options = SearchOptions(candidates=self.settings.search_candidates, exact=self.settings.search_exact)
        # The query's vector by (tenant, model, sha256 of the text), in this process only: a
        # search then writes nothing to the store (a hosted cluster's operations are its limit),
        # and, per tenant, how fast one tenant's search answers never tells whether another asked
        # the same text. The price: a query is embedded once per warm container and tenant.
        self._query_vectors: QueryCache[np.ndarray] = QueryCache(
            ttl_seconds=limits.EMBEDDING_CACHE_DAYS * 86_400, max_entries=QUERY_VECTOR_ENTRIES, copy=None
        )

    def search(self, tenant: str, request: models.SearchRequest | dict, *, reach: Reach = FULL) -> models.SearchResult:
        """``reach``: what the caller may see (capsule.governance.visibility); a global search
        covers its projects only, and every hit is of its subjects and visible to it."""
        req = validate(models.SearchRequest, request)
        if req.project is not None:  # one checkout, one project (ServiceProjects.project_of)
            req = req.model_copy(update={"project": self.project_of(tenant, req.project)})
        weights = weights_for(self.settings.weights, req)
        filters = filters_for(req.filters, reach)
        projects = self._reached_projects(tenant, req, reach)
        if projects == []:
            return models.SearchResult(
                results=[],
                explanation=(f"Searched 0 memories: none of the projects {reach.who} is scoped to holds any."),
            )
        markers = self._change_markers(tenant, projects)
        key = self._cache_key(tenant, req, markers, filters)
        if key is not None:
            cached = self.query_cache.get(key, self.clock())
            if cached is not None:
                return search_result(cached)
        answer, embed_error = self._search_afresh(tenant, req, projects, markers, filters, weights)
        if key is not None and embed_error is None:
            self.query_cache.put(key, answer, self.clock())
        return search_result(answer)

    def _cache_key(
        self, tenant: str, req: models.SearchRequest, markers: dict[str, int] | None, filters: Filters
    ) -> tuple | None:
        """The query cache's key: None (not cached) when the cache is off or the store tracks no
        changes, since only the projects' change markers say when an answer is stale."""
        if markers is None or not self.query_cache.max_entries:
            return None
        return (
            tenant,
            self.embedder.model_id,
            req.model_dump_json(by_alias=True),
            tuple(sorted(markers.items())),
            filters.visibility,
            filters.subjects,
        )

    def _search_afresh(
        self,
        tenant: str,
        req: models.SearchRequest,
        projects: list[str] | None,
        markers: dict[str, int] | None,
        filters: Filters,
        weights: Weights,
    ) -> tuple[Answer, str | None]:
        """The answer ranked from the indexes, and why it is not the whole answer (None if it is):
        the embedder could not help, or a half of a hosted shortlist did not answer."""
        query_vector, embed_error = None, None
        if weights.vector > 0:
            vectors, embed_error = self._embed_query(tenant, req.query)
            query_vector = None if vectors is None else vectors[0]
        indexes = self._shortlist(tenant, projects, filters, req.query, query_vector) or self._indexes(
            tenant, projects, markers, filters
        )
        hits, searched, unembedded = self._search_locked(indexes, filters, req, query_vector, weights)
        scope = "every project" if req.global_ else f"project '{req.project}'"
        explanation = f"Searched {searched} memories in {scope} ({req.mode}); {describe(hits, weights)}."
        if embed_error:
            explanation += f" Ranked by keyword only: the embedder is unavailable ({embed_error})."
        elif unembedded:
            where = "the projects searched" if req.global_ else scope
            explanation += (
                f" {unembedded} memories in {where} have no vector of {self.embedder.model_id} yet (stored while the "
                "embedder was down or under another model): found by keyword until the backfill job embeds them."
            )
        degraded = getattr(indexes[0], "degraded", "") if indexes else ""
        if degraded:
            explanation += f" Partial candidates: {degraded}."
        # Neither a keyword-only nor a partial answer is cached: the next search may do better.
        return self._answer(tenant, hits, explanation, req.include_superseded), embed_error or degraded or None

    def _reached_projects(self, tenant: str, req: models.SearchRequest, reach: Reach) -> list[str] | None:
        """The projects a search covers (None: every project of the tenant)."""
        if not req.global_:
            assert req.project is not None  # SearchRequest's rule: a project unless global
            reach.require_project(req.project)
            return [req.project]
        if reach.projects is None:
            return None
        return reach.projects_among(s.project for s in self.store.projects(tenant))

    def _embed_query(self, tenant: str, query: str) -> tuple[np.ndarray | None, str | None]:
        worth_keeping = getattr(self.embedder, "worth_caching", True)  # not the hashing embedder
        key = (tenant, self.embedder.model_id, sha256(query))
        kept = self._query_vectors.get(key, self.clock()) if worth_keeping else None
        if kept is not None:
            return kept, None
        try:
            vectors = self.embedder.embed([query], kind="query")
        except Unavailable as exc:
            return None, exc.message
        if worth_keeping:
            vectors = np.array(vectors, dtype=np.float32)  # our own copy, read-only: hits share it
            vectors.setflags(write=False)
            self._query_vectors.put(key, vectors, self.clock())
        return vectors, None

    def _search_locked(
        self,
        indexes: list[ProjectIndex],
        filters: Filters,
        req: models.SearchRequest,
        query_vector: np.ndarray | None,
        weights: Weights,
    ) -> tuple[list, int, int]:
        """The hits, how many memories were searched, and how many active memories of the indexes
        have no vector of the current model (0 without a query vector: none is compared by meaning)."""
        options = self._options
        if req.min_relevance is not None:
            options = replace(options, min_relevance=req.min_relevance)
        for index in indexes:
            index.lock.acquire()
        try:
            args: dict[str, Any] = dict(
                filters=filters,
                query=req.query,
                query_vector=query_vector,
                model_id=self.embedder.model_id,
                now=req.as_of or self.clock(),
                weights=weights,
                k=req.k,
                options=options,
            )
            if len(indexes) > 1:  # candidates chosen across the projects, not per project
                hits, searched = search_global(indexes, codes=self._tenant_codes, **args)
            else:
                hits, searched = search_indexes(indexes, **args)
            unembedded = 0 if query_vector is None else sum(index.unembedded() for index in indexes)
            return hits, searched, unembedded
        finally:
            for index in reversed(indexes):
                index.lock.release()

    def _answer(self, tenant: str, hits: list, explanation: str, walk: bool) -> Answer:
        """The answer to keep and give out: which hit superseded which is said, and with ``walk``
        each hit's chain is read."""
        records = [h.record for h in hits]
        explanation += superseded_note([(r.id, r.supersedes) for r in records], walk)
        chains: tuple = ()
        if walk:
            chains = tuple(() if r.supersedes is None else tuple(self._chain(tenant, r)) for r in records)
        return Answer(tuple(hits), explanation, chains)

    def _chain(self, tenant: str, hit: MemoryRecord) -> list[models.SupersededMemory]:
        record = MemoryRecord(
            id=hit.id,
            tenant=tenant,
            project=hit.project,
            content="",
            sha256="",
            occurred_at=hit.occurred_at,
            created_at=hit.created_at,
            updated_at=hit.created_at,
            supersedes=hit.supersedes,
        )
        return [
            models.SupersededMemory(
                id=r.id,
                content=r.content,
                superseded_by=r.superseded_by,
                occurred_at=r.occurred_at,
                created_at=r.created_at,
            )
            for r in self.history.chain(tenant, record)
        ]
