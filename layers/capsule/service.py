"""The memory operations: store, ingest, search, list, get, pin, forget, feedback, projects.

:class:`MemoryService` is given its store, embedder and clock; it holds no globals. Every
operation is scoped by the caller's tenant, takes a validated request model and returns a
result model with an ``explanation`` of what it did and why.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import replace
from functools import partial
from datetime import datetime, timedelta
from typing import Any, Callable, Type, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from . import limits, models
from .background import Background
from .chunking import chunk_text
from .clock import Clock, system_clock, to_epoch
from .config import Settings
from .context import text_to_embed
from .embedders.base import Embedder
from .embedders.base import describe as describe_embedder
from .errors import Conflict, InvalidInput, NotFound, Unavailable, from_validation_error
from .governance import audit as gov_actions
from .governance.intake import admit
from .governance.policy import for_new
from .governance.retention import effective_class, needs_force
from .governance.visibility import FULL, Reach, public_refusal
from .guard.apply import guard_chunks, guard_write
from .guard.policy import Policies
from .index import IndexCache, ProjectIndex, store_fetcher
from .answers import Answer, search_result, superseded_note
from .querycache import QueryCache
from .records import AuditRecord, ChangeSet, Filters, MemoryRecord, WriteOutcome
from .globalsearch import TenantCodes, search_global
from .search import SearchOptions, describe, search_indexes
from .snapshot import Snapshots
from .store.base import Cursor, MemoryStore, NearestCandidates
from .governance.retention import eviction_reason
from .text import sha256

M = TypeVar("M", bound=BaseModel)
logger = logging.getLogger("capsule.service")
# A write of at least this many records (a large document's chunks) goes through
# ``MemoryStore.insert_bulk``: the same rows, its per-batch work done once.
BULK_FROM = 256


def validate(model: Type[M], data: Any) -> M:
    """Validate ``data`` into ``model``; a failure is InvalidInput naming the field."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, model) from exc


def encode_cursor(record: MemoryRecord) -> str:
    """A page's position (see ``models.CURSOR_PATTERN``): every string of that shape decodes."""
    return f"{to_epoch(record.created_at):.6f}~{record.id.encode('utf-8').hex()}"


def decode_cursor(cursor: str) -> Cursor:
    if not re.fullmatch(models.CURSOR_PATTERN.strip("^$"), cursor):
        raise InvalidInput("cursor: is not a cursor this service returned", field="cursor")
    created, _, hex_id = cursor.partition("~")
    # Only a position to compare against: bytes that are not UTF-8 still order correctly enough.
    return float(created), bytes.fromhex(hex_id).decode("utf-8", "replace")


def to_memory(record: MemoryRecord) -> models.Memory:
    chunk = None
    if record.chunk_index is not None and record.chunk_count is not None:
        chunk = models.Chunk(index=record.chunk_index, of=record.chunk_count)
    return models.Memory(
        id=record.id, project=record.project, content=record.content, path=record.path, chunk=chunk,
        pinned=record.pinned, explanation=record.explanation, meta=record.meta, model=record.model,
        status=record.status, helpful=record.helpful, unhelpful=record.unhelpful,
        occurred_at=record.occurred_at, created_at=record.created_at, updated_at=record.updated_at,
        forgotten_at=record.deleted_at, retention=record.retention or "auto",
        effective_retention=effective_class(record.retention, record.pinned), expires_at=record.expires_at,
        supersedes=record.supersedes, superseded_by=record.superseded_by, sha256=sha256(record.content),
        visibility=record.visibility or "private", subject=record.subject,
    )


def visibility_of(req: models.StoreRequest | models.IngestRequest, metas: list[dict[str, Any]]
                  ) -> tuple[str, str | None]:
    """The visibility and subject a write stores; a public one whose text the guard flagged is
    refused (409 naming the kinds) before anything is written."""
    visibility = req.visibility or "private"
    for meta in metas:
        refused = public_refusal(visibility, meta, "the text")
        if refused is not None:
            raise refused
    return visibility, req.subject


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        *,
        clock: Clock = system_clock,
        settings: Settings | None = None,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        governance: Any = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.clock = clock
        self.settings = settings or Settings()
        self._new_id = new_id
        self._governance_store = governance  # capsule.store.governance.GovernanceStore; None: from the store
        self._history: Any = None
        # Kept for the life of this object: warm project indexes and recent results.
        self.indexes = IndexCache(self.settings.index_memory_mb << 20, fetch=store_fetcher(store))
        # Answers are kept as they are: nothing changes one, each caller gets models of its own.
        self.query_cache: QueryCache[Answer] = QueryCache(max_entries=self.settings.query_cache_entries, copy=None)
        # Looked up once: a runtime Protocol check costs more than a small search's scoring.
        self._has_shortlist = isinstance(store, NearestCandidates)
        self._tracks_changes = hasattr(store, "changes_since")
        self._snapshots: Snapshots | None | bool = False  # False: not looked up yet (it reads the store)
        self._tenant_codes = TenantCodes()  # a global search's first-pass codes, until an index changes
        self._options = SearchOptions(candidates=self.settings.search_candidates,
                                      exact=self.settings.search_exact)
        # Reads a large index's deferred vectors (and then writes its snapshot) after the search
        # that loaded it has returned.
        self.background = Background("capsule-index")

    # ---- writing ---------------------------------------------------------

    def _embed(self, texts: list[str]) -> tuple[np.ndarray | None, str | None]:
        """Vectors for ``texts``, or None and the reason when the embedder is down.

        Any embedder failure, not only a declared outage, must not cost the write: the
        memory is stored as pending and the backfill job embeds it later.
        """
        try:
            return self.embedder.embed(texts), None
        except Unavailable as exc:
            return None, exc.message
        except Exception as exc:  # a broken model or client: logged, then queued for backfill
            logger.exception("embedder %s failed; storing as pending_embedding", self.embedder.model_id)
            return None, f"{type(exc).__name__}: {exc}"

    def _records(
        self, tenant: str, project: str, contents: list[str], *, path: str | None, pinned: bool,
        explanation: str | None, meta: dict[str, Any], occurred_at: datetime | None,
        retention: tuple[str, datetime | None] = ("auto", None), supersedes: str | None = None,
        visible: tuple[str, str | None] = ("private", None),
    ) -> tuple[list[MemoryRecord], str | None]:
        now = self.clock()
        contents = [admit(tenant, project, content).content for content in contents]
        records = []
        for index, content in enumerate(contents):
            # An import names when each piece happened: two equal turns at different times stay two.
            key = sha256(content if occurred_at is None else f"{content}\x00{occurred_at.isoformat()}")
            records.append(MemoryRecord(
                id=self._new_id(), tenant=tenant, project=project, content=content, sha256=key,
                occurred_at=occurred_at or now, created_at=now, updated_at=now, path=path,
                chunk_index=index if len(contents) > 1 else None,
                chunk_count=len(contents) if len(contents) > 1 else None,
                pinned=pinned, explanation=explanation, meta=meta, status="pending_embedding",
                retention=retention[0], expires_at=retention[1], supersedes=supersedes,
                visibility=visible[0], subject=visible[1],
            ))
        words = self.settings.session_context_words
        vectors, embed_error = self._embed([text_to_embed(self.store, r, max_words=words) for r in records])
        if vectors is not None:
            for record, vector in zip(records, vectors):
                record.embedding, record.model, record.status = vector, self.embedder.model_id, "ready"
        return records, embed_error

    def _write(self, tenant: str, records: list[MemoryRecord]) -> WriteOutcome:
        project = records[0].project
        limit = self.store.retention_limit(tenant, project) or self.settings.retention_limit
        dedupe_after = self.clock() - timedelta(hours=limits.DEDUPE_HOURS)
        # Many chunks at once (a large document): the store's bulk insert, the same rows.
        bulk = getattr(self.store, "insert_bulk", None) if len(records) >= BULK_FROM else None
        return (bulk or self.store.insert)(records, limit=limit, dedupe_after=dedupe_after, actor=tenant)

    @staticmethod
    def _retention_note(outcome: WriteOutcome) -> tuple[list[models.Eviction], str]:
        def reason(memory_id: str) -> str:
            return eviction_reason(outcome.limit, outcome.evicted_classes.get(memory_id, "replaceable"))

        evicted = [models.Eviction(id=i, reason=reason(i)) for i in outcome.evicted]
        note = ""
        if evicted:
            note = f" Evicted {len(evicted)} ({', '.join(outcome.evicted)}): {reason(outcome.evicted[0])}."
        if outcome.active_after > outcome.limit:
            note += (
                f" The project is over its limit ({outcome.active_after} of {outcome.limit}): every older"
                " memory is pinned, irreplaceable, permanent or part of this write, so nothing more could be evicted."
            )
        return evicted, note

    @staticmethod
    def _pending_note(embed_error: str | None) -> str:
        if embed_error is None:
            return ""
        return (f" No embedding could be made ({embed_error}); it is found by keyword now and"
                " the backfill job will embed it.")

    def _embedder_note(self, outcome: WriteOutcome) -> str:
        """A project's first write says which embedder makes its vectors, and why that one."""
        before = outcome.active_after - len(outcome.inserted) + len(outcome.evicted)
        if not outcome.inserted or before > 0:
            return ""
        return f" Embedder: {describe_embedder(self.embedder).sentence()}."

    def _retention(self, tenant: str, req: models.StoreRequest | models.IngestRequest) -> tuple[str, datetime | None]:
        default = self.settings.ephemeral_ttl
        if req.retention == "ephemeral" and req.ttl is None and req.expires_at is None:
            default = self.governance_store.project_ttl(tenant, req.project) or default
        return for_new(self.clock(), retention=req.retention, ttl=req.ttl, expires_at=req.expires_at,
                       default_ttl=default)

    def guard_policies(self, tenant: str, project: str) -> Policies:
        """The project's own policies, the deployment's where it has not set one."""
        own = self.store.guard_policies(tenant, project)
        return Policies(secrets=own["secrets_policy"] or self.settings.secrets_policy,
                        pii=own["pii_policy"] or self.settings.pii_policy)

    def store_memory(self, tenant: str, request: models.StoreRequest | dict) -> models.StoreResult:
        req = validate(models.StoreRequest, request)
        retention = self._retention(tenant, req)
        if req.supersedes is not None:
            self._supersedable(tenant, req.supersedes)
        # Secrets and personal data, handled by the project's policies before anything is
        # embedded or stored (capsule.guard).
        guarded = guard_write([req.content], req.explanation, req.meta.plain(),
                              self.guard_policies(tenant, req.project))
        visible = visibility_of(req, [guarded.meta_for(0)])
        records, embed_error = self._records(
            tenant, req.project, guarded.texts, path=req.path, pinned=req.pinned,
            explanation=guarded.explanation, meta=guarded.meta_for(0), occurred_at=req.occurred_at,
            retention=retention, supersedes=req.supersedes, visible=visible,
        )
        outcome = self._write(tenant, records)
        evicted, note = self._retention_note(outcome)
        if req.supersedes is not None:
            note += self._supersede(tenant, req.supersedes, outcome.duplicates.get(records[0].id, records[0].id))
        if outcome.duplicates:
            existing = self.store.get(tenant, outcome.duplicates[records[0].id])
            if req.pinned and not existing.pinned:  # the caller asked that it never be evicted
                existing = self.store.set_pinned(tenant, existing.id, True, at=self.clock(), actor=tenant)
                note += " Pinned the existing memory, as this store asked."
            return models.StoreResult(
                memory=to_memory(existing), deduplicated=True, evicted=evicted,
                explanation=(
                    f"The same content was stored in project '{req.project}' at "
                    f"{existing.created_at.isoformat()}, within {limits.DEDUPE_HOURS} hours: returned the existing "
                    f"memory {existing.id} instead of storing it twice." + note
                ),
            )
        memory = self._stored(tenant, records[0], changed_after=req.supersedes is not None)
        pin = " and pinned it (pinned memories are never evicted)" if req.pinned else ""
        pin += self._class_note(memory)
        return models.StoreResult(
            memory=to_memory(memory), evicted=evicted,
            explanation=f"Stored memory {memory.id} in project '{req.project}'{pin}."
            + guarded.note() + note + self._pending_note(embed_error) + self._embedder_note(outcome),
        )

    def _stored(self, tenant: str, record: MemoryRecord, *, changed_after: bool) -> MemoryRecord:
        """The memory just inserted, as the store reads it back: a store that can say so without
        reading it (``as_stored``) saves a read per store, unless the write changed it after."""
        as_stored = getattr(self.store, "as_stored", None)
        if as_stored is None or changed_after:
            return self.store.get(tenant, record.id)
        return as_stored(record)

    def _supersedable(self, tenant: str, old_id: str) -> None:
        try:
            self.store.get(tenant, old_id)
        except NotFound:
            raise InvalidInput(f"supersedes: no active memory {old_id} to supersede", field="supersedes") from None

    def _supersede(self, tenant: str, old_id: str, new_id: str) -> str:
        if old_id == new_id:
            return f" It is memory {old_id} itself (the same content), so nothing was superseded."
        try:
            self.governance_store.supersede(tenant, old_id, new_id, at=self.clock(), actor=tenant,
                                            reason=f"superseded by {new_id}")
        except NotFound:
            return f" Memory {old_id} was forgotten meanwhile, so nothing was superseded."
        return (f" It supersedes memory {old_id}, which is kept (history) but no longer returned by search or list"
                " unless include_superseded.")

    @staticmethod
    def _class_note(record: MemoryRecord) -> str:
        klass = effective_class(record.retention, record.pinned)
        if klass == "ephemeral" and record.expires_at is not None:
            return f"; class ephemeral: it expires at {record.expires_at.isoformat()}"
        return f"; class {klass}" if klass != "replaceable" else ""

    @property
    def governance_store(self):
        """The governance side of the store (capsule.store.governance), in the same database."""
        if self._governance_store is None:
            from .store.governance import governance_store

            self._governance_store = governance_store(self.store)
        return self._governance_store

    @property
    def history(self):
        """Update with history, revert, supersession chains (capsule.governance.history)."""
        if self._history is None:
            from .governance.history import History

            self._history = History(self)
        return self._history

    def ingest(self, tenant: str, request: models.IngestRequest | dict) -> models.IngestResult:
        req = validate(models.IngestRequest, request)
        retention = self._retention(tenant, req)
        guarded = guard_chunks(req.text, partial(chunk_text, path=req.path), req.meta.plain(),
                               self.guard_policies(tenant, req.project))
        chunks = guarded.texts
        if not chunks:
            raise InvalidInput("text has no content to store", field="text")
        visible = visibility_of(req, [guarded.meta_for(i) for i in range(len(chunks))])
        records, embed_error = self._records(
            tenant, req.project, guarded.texts, path=req.path, pinned=req.pinned, explanation=None,
            meta=req.meta.plain(), occurred_at=req.occurred_at, retention=retention, visible=visible,
        )
        for index, record in enumerate(records):  # each chunk carries its own findings
            record.meta = guarded.meta_for(index)
        outcome = self._write(tenant, records)
        evicted, note = self._retention_note(outcome)
        ids = [outcome.duplicates.get(r.id, r.id) for r in records]
        duplicated = [outcome.duplicates[r.id] for r in records if r.id in outcome.duplicates]
        text = f"Split the text into {len(chunks)} chunk{'s' if len(chunks) != 1 else ''}"
        text += f" and stored {len(outcome.inserted)} in project '{req.project}'."
        if duplicated:
            text += (f" {len(duplicated)} chunk(s) were already stored within {limits.DEDUPE_HOURS} hours;"
                     " their existing ids are returned.")
        return models.IngestResult(
            ids=ids, chunks=len(chunks), deduplicated=duplicated, evicted=evicted,
            explanation=text + guarded.note() + note + (self._pending_note(embed_error) if outcome.inserted else "")
            + self._embedder_note(outcome),
        )

    # ---- reading ---------------------------------------------------------

    def search(self, tenant: str, request: models.SearchRequest | dict, *, reach: Reach = FULL
               ) -> models.SearchResult:
        """``reach``: what the caller may see (capsule.governance.visibility); a global search
        covers its projects only, and every hit is of its subjects and visible to it."""
        req = validate(models.SearchRequest, request)
        weights = self.settings.weights
        if req.weights is not None:
            weights = weights.replace(**req.weights.model_dump())
        if req.mode == "vector":
            weights = weights.replace(bm25=0.0)
        elif req.mode == "bm25":
            weights = weights.replace(vector=0.0)
        f = req.filters
        filters = Filters(
            component=f.component, category=f.category, tags=tuple(f.tags), path_prefix=f.path_prefix,
            since=f.since, until=f.until, retention=f.retention,
            visibility=reach.visibilities(f.visibility), subjects=reach.subjects_for(f.subject),
        )
        projects = self._reached_projects(tenant, req, reach)
        if projects == []:
            return models.SearchResult(results=[], explanation=(
                f"Searched 0 memories: none of the projects {reach.who} is scoped to holds any."))
        markers = self._change_markers(tenant, projects)
        key = None
        if markers is not None and self.query_cache.max_entries:
            key = (tenant, self.embedder.model_id, req.model_dump_json(by_alias=True),
                   tuple(sorted(markers.items())), filters.visibility, filters.subjects)
            cached = self.query_cache.get(key, self.clock())
            if cached is not None:
                return search_result(cached)
        query_vector, embed_error = None, None
        if weights.vector > 0:
            vectors, embed_error = self._embed_query(req.query)
            query_vector = None if vectors is None else vectors[0]
        indexes = (self._shortlist(tenant, projects, filters, req.query, query_vector)
                   or self._indexes(tenant, projects, markers, filters))
        hits, searched = self._search_locked(indexes, filters, req, query_vector, weights)
        scope = "every project" if req.global_ else f"project '{req.project}'"
        explanation = f"Searched {searched} memories in {scope} ({req.mode}); {describe(hits, weights)}."
        if embed_error:
            explanation += f" Ranked by keyword only: the embedder is unavailable ({embed_error})."
        answer = self._answer(tenant, hits, explanation, req.include_superseded)
        if key is not None and embed_error is None and self.query_cache.max_entries:
            self.query_cache.put(key, answer, self.clock())
        return search_result(answer)

    def _reached_projects(self, tenant: str, req: models.SearchRequest, reach: Reach) -> list[str] | None:
        """The projects a search covers (None: every project of the tenant)."""
        if not req.global_:
            reach.require_project(req.project)
            return [req.project]
        if reach.projects is None:
            return None
        return reach.projects_among(s.project for s in self.store.projects(tenant))

    def _search_locked(self, indexes: list[ProjectIndex], filters: Filters, req: models.SearchRequest,
                       query_vector: np.ndarray | None, weights) -> tuple[list, int]:
        options = self._options
        if req.min_relevance is not None:
            options = replace(options, min_relevance=req.min_relevance)
        for index in indexes:
            index.lock.acquire()
        try:
            args = dict(filters=filters, query=req.query, query_vector=query_vector,
                        model_id=self.embedder.model_id, now=req.as_of or self.clock(), weights=weights, k=req.k,
                        options=options)
            if len(indexes) > 1:  # candidates chosen across the projects, not per project
                return search_global(indexes, codes=self._tenant_codes, **args)
            return search_indexes(indexes, **args)
        finally:
            for index in reversed(indexes):
                index.lock.release()

    def _change_markers(self, tenant: str, projects: list[str] | None) -> dict[str, int] | None:
        """Per-project versions, or None when the store cannot track changes."""
        if not self._tracks_changes:
            return None
        return self.store.change_markers(tenant, projects)

    def _indexes(self, tenant: str, projects: list[str] | None, markers: dict[str, int] | None,
                 filters: Filters) -> list[ProjectIndex]:
        """Current indexes of the projects searched: warm ones brought up to date, or one cold one."""
        model = self.embedder.model_id
        if markers is None:  # a store without change tracking: one index built for this search
            return [self._cold_index(tenant, self.store.candidates(tenant, projects, filters))]
        indexes = []
        for project in sorted(markers):  # one lock order everywhere: no deadlock between searches
            index = self.indexes.get(tenant, project, model)
            with index.lock:
                index.term_variants = self._term_variants(tenant)
                if index.version == 0 and self.snapshots is not None:
                    # A large matrix read from the store goes to a file beside the snapshots.
                    index.spill_path = index.spill_path or partial(self.snapshots.spill_path, index)
                    self.snapshots.load(index)
                if index.version != markers[project] or index.version == 0:
                    changes = self.store.changes_since(tenant, project, index.version, columns=True)
                    index.apply(changes)
                    if changes.reset and index.deferred is None:
                        if self.snapshots is not None:
                            self.snapshots.save(index)
                        # What a full load leaves for later (sorting its postings, moving its
                        # matrix) is done beside the next searches; a one-shot process skips it.
                        self.background.submit(index.settle)
                if index.deferred is not None and not index.settling:
                    # Its vectors are read beside the next searches (again, if an earlier
                    # attempt failed), then its snapshot is written.
                    index.settling = True
                    self.background.submit(lambda index=index: self._complete(index))
            indexes.append(index)
        self.indexes.trim(keep=lambda i: i in indexes)
        return indexes

    def _complete(self, index: ProjectIndex) -> None:
        """Read an index's deferred vectors, then keep its snapshot (off the request's path)."""
        try:
            index.settle()
        finally:
            index.settling = False
        if self.snapshots is not None:
            with index.lock:
                if index.deferred is None and index.version:
                    self.snapshots.save(index)

    def settle(self) -> None:
        """Wait until the work scheduled after earlier searches is done (indexes complete)."""
        self.background.wait()

    @property
    def snapshots(self) -> Snapshots | None:
        """Index snapshots beside an embedded store that has an identity; None otherwise."""
        if self._snapshots is False:
            identity = getattr(self.store, "identity", None)
            if not self.settings.index_snapshot_min or identity is None or not self._tracks_changes:
                self._snapshots = None
            else:
                try:
                    name = identity()
                except Unavailable:  # a database not migrated since snapshots came: just no snapshots
                    name = None
                self._snapshots = name and Snapshots(self.settings.data_dir / "index", name,
                                                     min_rows=self.settings.index_snapshot_min)
        return self._snapshots or None

    def _cold_index(self, tenant: str, records: list[MemoryRecord]) -> ProjectIndex:
        """An index built for one search from the given records."""
        index = ProjectIndex(tenant, "", self.embedder.model_id)
        index.term_variants = self._term_variants(tenant)
        index.apply(ChangeSet(version=0, changed=records, reset=True))
        return index

    def _term_variants(self, tenant: str):
        """A query term's keyed hashes for the tenant's sealed memories (capsule.crypto), or None."""
        variants = getattr(self.store, "term_variants", None)
        return None if variants is None else variants(tenant)

    def _shortlist(self, tenant: str, projects: list[str] | None, filters: Filters, query: str,
                   query_vector: np.ndarray | None) -> list[ProjectIndex] | None:
        """For a scope too large to hold (Atlas Vector Search and ``$text``), an index of the
        store's shortlist. Without a query vector (keyword mode, the embedder down) too: a large
        scope is never read whole for want of a vector."""
        if not self._has_shortlist:
            return None
        shortlist = self.store.nearest_candidates(
            tenant, projects, filters, query=query, query_vector=query_vector, model=self.embedder.model_id,
        )
        return None if shortlist is None else [self._cold_index(tenant, shortlist)]

    def _embed_query(self, query: str) -> tuple[np.ndarray | None, str | None]:
        try:
            return self.embedder.embed([query], kind="query"), None
        except Unavailable as exc:
            return None, exc.message

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
        record = MemoryRecord(id=hit.id, tenant=tenant, project=hit.project, content="", sha256="",
                              occurred_at=hit.occurred_at, created_at=hit.created_at,
                              updated_at=hit.created_at, supersedes=hit.supersedes)
        return [models.SupersededMemory(id=r.id, content=r.content, superseded_by=r.superseded_by,
                                        occurred_at=r.occurred_at, created_at=r.created_at)
                for r in self.history.chain(tenant, record)]

    def list_memories(self, tenant: str, request: models.ListRequest | dict, *, reach: Reach = FULL
                      ) -> models.ListResult:
        req = validate(models.ListRequest, request)
        reach.require_project(req.project)
        after = decode_cursor(req.cursor) if req.cursor else None
        by_class = {} if req.retention is None else {"retention": req.retention}
        seen = {k: v for k, v in (("visibility", reach.visibilities(req.visibility)),
                                  ("subjects", reach.subjects_for(req.subject))) if v}
        rows = self.store.list(tenant, req.project, pinned_only=req.pinned_only, after=after, limit=req.limit + 1,
                               forgotten=req.forgotten, **by_class, **seen)
        page, more = rows[: req.limit], len(rows) > req.limit
        kind = " ".join(w for w in ("pinned" if req.pinned_only else "", "forgotten" if req.forgotten else "") if w) or "recent"
        if req.retention is not None:
            kind += f" {req.retention}"
        if req.visibility is not None:
            kind += f" {req.visibility}"
        return models.ListResult(
            memories=[to_memory(r) for r in page],
            next_cursor=encode_cursor(page[-1]) if more else None,
            explanation=f"{len(page)} {kind} {'memory' if len(page) == 1 else 'memories'} of project '{req.project}', newest first"
            + ("; more follow the cursor." if more else "."),
        )

    def get_record(self, tenant: str, memory_id: str) -> MemoryRecord:
        """An active memory, or a superseded one (kept as history); NotFound otherwise."""
        try:
            return self.store.get(tenant, memory_id)
        except NotFound:
            record = self.store.get(tenant, memory_id, include_forgotten=True)
            if record.deleted_reason != "superseded":
                raise
            return record

    def get(self, tenant: str, memory_id: str) -> models.MemoryResult:
        record = self.get_record(tenant, memory_id)
        note = f" It was superseded by {record.superseded_by}." if record.deleted_reason == "superseded" else ""
        return models.MemoryResult(memory=to_memory(record), explanation=f"Memory {memory_id}.{note}")

    # ---- changing --------------------------------------------------------

    def pin(self, tenant: str, memory_id: str, pinned: bool = True) -> models.MemoryResult:
        record = self.store.set_pinned(tenant, memory_id, pinned, at=self.clock(), actor=tenant)
        text = ("Pinned: it is never evicted by the rolling limit." if pinned
                else "Unpinned: the rolling limit may evict it once it is the oldest.")
        return models.MemoryResult(memory=to_memory(record), explanation=f"{text} ({memory_id})")

    def forget(self, tenant: str, memory_id: str, request: models.ForgetRequest | dict | None = None
               ) -> models.MemoryResult:
        req = validate(models.ForgetRequest, request or {})
        reason = req.reason or "forgotten by request"
        if not req.force:
            self._refuse_unforced(tenant, self.store.get(tenant, memory_id), reason)
        record = self.store.forget(tenant, memory_id, at=self.clock(), actor=tenant, reason=reason)
        until = record.deleted_at + timedelta(days=limits.FORGET_RECOVERABLE_DAYS)
        return models.MemoryResult(
            memory=to_memory(record),
            explanation=(f"Forgot {memory_id} ({reason}). Search and list no longer show it;"
                         f" restore brings it back until {until.date().isoformat()}, then it is purged."),
        )

    def _refuse_unforced(self, tenant: str, record: MemoryRecord, reason: str) -> None:
        if not needs_force(record.retention, record.pinned):
            return
        why = "irreplaceable"
        self.governance_store.add_audit(AuditRecord(
            tenant=tenant, memory_id=record.id, project=record.project, action=gov_actions.REFUSE, actor=tenant,
            reason=f"forget refused: the memory is {why} and force was not given ({reason})", at=self.clock()))
        raise Conflict(f"memory {record.id} is {why}: forget it with force true, or change its retention first",
                       details=[{"field": "force", "message": "required to forget an irreplaceable memory"}])

    def restore(self, tenant: str, memory_id: str) -> models.RestoreResult:
        record = self.store.restore(tenant, memory_id, at=self.clock(), actor=tenant)
        limit = self.store.retention_limit(tenant, record.project) or self.settings.retention_limit
        held = next((s.memories for s in self.store.projects(tenant) if s.project == record.project), 0)
        text = f"Restored {memory_id}."
        if held > limit:
            # A restore undoes a forget or an eviction: it never makes another memory go in its place.
            text += (f" Project '{record.project}' now holds {held} memories, over its limit of {limit}; nothing"
                     " else was evicted. The next store (or the daily retention job) evicts the oldest unpinned"
                     " ones beyond the limit, which may be this one: pin it to keep it, or raise the limit.")
        return models.RestoreResult(memory=to_memory(record), explanation=text, over_limit=held > limit,
                                    memories=held, retention_limit=limit)

    def feedback(self, tenant: str, memory_id: str, request: models.FeedbackRequest | dict
                 ) -> models.MemoryResult:
        req = validate(models.FeedbackRequest, request)
        record = self.store.add_feedback(tenant, memory_id, helpful=req.helpful, context=req.context,
                                         at=self.clock())
        vote = "helpful" if req.helpful else "not helpful"
        return models.MemoryResult(
            memory=to_memory(record),
            explanation=(f"Recorded '{vote}' for {memory_id} ({record.helpful} helpful,"
                         f" {record.unhelpful} not); search ranks it by the Wilson lower bound of that ratio."),
        )

    def projects(self, tenant: str) -> models.ProjectsResult:
        stats = self.store.projects(tenant)
        return models.ProjectsResult(
            projects=[
                models.ProjectInfo(
                    project=s.project, memories=s.memories, pinned=s.pinned, forgotten=s.forgotten,
                    retention_limit=s.retention_limit or self.settings.retention_limit,
                    last_activity=s.last_activity,
                    secrets_policy=p.secrets, pii_policy=p.pii, encryption=self._encryption(tenant, s.project),
                )
                for s, p in zip(stats, [self.guard_policies(tenant, s.project) for s in stats])
            ],
            explanation=f"{len(stats)} project{'s' if len(stats) != 1 else ''}, most recently active first.",
        )

    def _encryption(self, tenant: str, project: str) -> str | None:
        """The project's encryption at rest (capsule.crypto), None where this store seals nothing."""
        sealer = getattr(self.store, "sealer", None)
        return None if sealer is None else sealer.mode(tenant, project)

    def set_project_settings(self, tenant: str, project: str, request: models.ProjectSettingsRequest | dict
                             ) -> models.ProjectsResult:
        """Set the settings given (retention limit, secrets and personal-data policies)."""
        req = validate(models.ProjectSettingsRequest, request)
        validate(models.ListRequest, {"project": project})  # the same name rules as everywhere
        said = []
        if req.retention_limit is not None:
            self.store.set_retention_limit(tenant, project, req.retention_limit, at=self.clock())
            said.append(f"now keeps at most {req.retention_limit} memories;"
                        " the next store evicts the oldest unpinned ones beyond it")
        if req.ephemeral_ttl is not None:
            self.governance_store.set_project_ttl(tenant, project, req.ephemeral_ttl, at=self.clock())
            said.append(f"keeps an ephemeral memory stored without a ttl {req.ephemeral_ttl} seconds")
        policies = {k: v for k, v in (("secrets_policy", req.secrets_policy), ("pii_policy", req.pii_policy)) if v}
        if policies:
            self.store.set_guard_policies(tenant, project, policies, at=self.clock())
            said.append("will " + " and ".join(f"{v} {'secrets' if k == 'secrets_policy' else 'personal data'}"
                                               for k, v in policies.items()) + " found in what is stored next")
        if req.encryption is not None:
            from .crypto.setup import set_encryption

            said.append(set_encryption(self.store, tenant, project, req.encryption, at=self.clock()))
        result = self.projects(tenant)
        result.explanation = f"Project '{project}' " + "; it ".join(said) + "."
        return result

    set_retention_limit = set_project_settings  # the name its first callers know
