"""How :class:`~capsule.service.memory_service.MemoryService` stores: one memory (``store_memory``) or a
text split into chunks (``ingest``), guarded, embedded (or left pending when the embedder is
down), deduplicated, inserted under the project's retention limit, and explained
(:mod:`capsule.service.write_notes`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import numpy as np

from ..config import Settings
from ..core import limits, models
from ..core.clock import Clock
from ..core.errors import Conflict, InvalidInput, NotFound, Unavailable
from ..core.records import MemoryRecord, WriteOutcome
from ..core.retention_policy import for_new
from ..core.text import sha256
from ..embedders.base import Embedder
from ..governance.intake import admit
from ..governance.visibility import public_refusal
from ..guard.apply import guard_chunks, guard_write
from ..guard.policy import Policies
from ..store.base import MemoryStore
from .chunking import chunk_text
from .context import text_to_embed
from .edge import to_memory, validate
from .write_notes import class_note, embedder_note, pending_note, retention_note

logger = logging.getLogger("capsule.service.memory_service")
# What the store is given as the limit of a project with no rolling limit: never reached.
NO_LIMIT_FOR_STORE = 2**62
# A write of at least this many records (a large document's chunks) goes through
# ``MemoryStore.insert_bulk``: the same rows, its per-batch work done once.
BULK_FROM = 256


def visibility_of(
    req: models.StoreRequest | models.IngestRequest, metas: list[dict[str, Any]]
) -> tuple[str, str | None]:
    """The visibility and subject a write stores; a public one whose text the guard flagged is
    refused (409 naming the kinds) before anything is written."""
    visibility = req.visibility or "private"
    for meta in metas:
        refused = public_refusal(visibility, meta, "the text")
        if refused is not None:
            raise refused
    return visibility, req.subject


class ServiceWrites:
    # Given by MemoryService's constructor.
    store: MemoryStore
    embedder: Embedder
    clock: Clock
    settings: Settings
    _new_id: Callable[[], str]
    governance_store: Any  # MemoryService.governance_store
    guard_policies: Callable[[str, str], Policies]  # ServiceProjects.guard_policies
    retention_limit: Callable[[str, str], int | None]  # ServiceProjects.retention_limit
    project_of: Callable[[str, str], str]  # ServiceProjects.project_of

    def store_memory(self, tenant: str, request: models.StoreRequest | dict) -> models.StoreResult:
        req = self._in_project(tenant, validate(models.StoreRequest, request))
        retention = self._retention(tenant, req)
        if req.supersedes is not None:
            self._supersedable(tenant, req.supersedes)
        # Secrets and personal data, handled by the project's policies before anything is
        # embedded or stored (capsule.guard).
        guarded = guard_write(
            [req.content], req.explanation, req.meta.plain(), self.guard_policies(tenant, req.project)
        )
        visible = visibility_of(req, [guarded.meta_for(0)])
        records, embed_error = self._records(
            tenant,
            req.project,
            guarded.texts,
            path=req.path,
            pinned=req.pinned,
            explanation=guarded.explanation,
            meta=guarded.meta_for(0),
            occurred_at=req.occurred_at,
            retention=retention,
            supersedes=req.supersedes,
            visible=visible,
        )
        outcome = self._write(tenant, records)
        evicted, note = retention_note(outcome)
        if req.supersedes is not None:
            note += self._supersede(tenant, req.supersedes, outcome.duplicates.get(records[0].id, records[0].id))
        if outcome.duplicates:
            return self._deduplicated(tenant, req, outcome.duplicates[records[0].id], evicted, note)
        memory = self._stored(tenant, records[0], changed_after=req.supersedes is not None)
        pin = " and pinned it (pinned memories are never evicted)" if req.pinned else ""
        pin += class_note(memory)
        return models.StoreResult(
            memory=to_memory(memory),
            evicted=evicted,
            explanation=f"Stored memory {memory.id} in project '{req.project}'{pin}."
            + guarded.note()
            + note
            + pending_note(embed_error)
            + embedder_note(outcome, self.embedder),
        )

    def _deduplicated(
        self, tenant: str, req: models.StoreRequest, existing_id: str, evicted: list[models.Eviction], note: str
    ) -> models.StoreResult:
        """The memory already stored with the same content, returned instead of a second one."""
        existing = self.store.get(tenant, existing_id)
        if req.pinned and not existing.pinned:  # the caller asked that it never be evicted
            existing = self.store.set_pinned(tenant, existing.id, True, at=self.clock(), actor=tenant)
            note += " Pinned the existing memory, as this store asked."
        return models.StoreResult(
            memory=to_memory(existing),
            deduplicated=True,
            evicted=evicted,
            explanation=(
                f"The same content was stored in project '{req.project}' at "
                f"{existing.created_at.isoformat()}, within {limits.DEDUPE_HOURS} hours: returned the existing "
                f"memory {existing.id} instead of storing it twice." + note
            ),
        )

    def ingest(self, tenant: str, request: models.IngestRequest | dict) -> models.IngestResult:
        req = self._in_project(tenant, validate(models.IngestRequest, request))
        retention = self._retention(tenant, req)
        guarded = guard_chunks(
            req.text, partial(chunk_text, path=req.path), req.meta.plain(), self.guard_policies(tenant, req.project)
        )
        chunks = guarded.texts
        if not chunks:
            raise InvalidInput("text has no content to store", field="text")
        self._within_limit(tenant, req.project, len(chunks))
        visible = visibility_of(req, [guarded.meta_for(i) for i in range(len(chunks))])
        records, embed_error = self._records(
            tenant,
            req.project,
            guarded.texts,
            path=req.path,
            pinned=req.pinned,
            explanation=None,
            meta=req.meta.plain(),
            occurred_at=req.occurred_at,
            retention=retention,
            visible=visible,
        )
        for index, record in enumerate(records):  # each chunk carries its own findings
            record.meta = guarded.meta_for(index)
        outcome = self._write(tenant, records)
        evicted, note = retention_note(outcome)
        ids = [outcome.duplicates.get(r.id, r.id) for r in records]
        duplicated = [outcome.duplicates[r.id] for r in records if r.id in outcome.duplicates]
        text = f"Split the text into {len(chunks)} chunk{'s' if len(chunks) != 1 else ''}"
        text += f" and stored {len(outcome.inserted)} in project '{req.project}'."
        if duplicated:
            text += (
                f" {len(duplicated)} chunk(s) were already stored within {limits.DEDUPE_HOURS} hours;"
                " their existing ids are returned."
            )
        return models.IngestResult(
            ids=ids,
            chunks=len(chunks),
            deduplicated=duplicated,
            evicted=evicted,
            explanation=text
            + guarded.note()
            + note
            + (pending_note(embed_error) if outcome.inserted else "")
            + embedder_note(outcome, self.embedder),
        )

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
        self,
        tenant: str,
        project: str,
        contents: list[str],
        *,
        path: str | None,
        pinned: bool,
        explanation: str | None,
        meta: dict[str, Any],
        occurred_at: datetime | None,
        retention: tuple[str, datetime | None] = ("auto", None),
        supersedes: str | None = None,
        visible: tuple[str, str | None] = ("private", None),
    ) -> tuple[list[MemoryRecord], str | None]:
        now = self.clock()
        contents = [admit(tenant, project, content).content for content in contents]
        records = []
        for index, content in enumerate(contents):
            # An import names when each piece happened: two equal turns at different times stay two.
            key = sha256(content if occurred_at is None else f"{content}\x00{occurred_at.isoformat()}")
            records.append(
                MemoryRecord(
                    id=self._new_id(),
                    tenant=tenant,
                    project=project,
                    content=content,
                    sha256=key,
                    occurred_at=occurred_at or now,
                    created_at=now,
                    updated_at=now,
                    path=path,
                    chunk_index=index if len(contents) > 1 else None,
                    chunk_count=len(contents) if len(contents) > 1 else None,
                    pinned=pinned,
                    explanation=explanation,
                    meta=meta,
                    status="pending_embedding",
                    retention=retention[0],
                    expires_at=retention[1],
                    supersedes=supersedes,
                    visibility=visible[0],
                    subject=visible[1],
                )
            )
        words = self.settings.session_context_words
        vectors, embed_error = self._embed([text_to_embed(self.store, r, max_words=words) for r in records])
        if vectors is not None:
            for record, vector in zip(records, vectors):
                record.embedding, record.model, record.status = vector, self.embedder.model_id, "ready"
        return records, embed_error

    def _in_project(self, tenant: str, req: Any) -> Any:
        """The request with the project its name means (one checkout, one project)."""
        project = self.project_of(tenant, req.project)
        return req if project == req.project else req.model_copy(update={"project": project})

    def _within_limit(self, tenant: str, project: str, chunks: int) -> None:
        """An ingest of more chunks than the project's limit is refused before anything is
        written: kept, it could only be held by evicting its own chunks, or leave the project
        over its limit for a later write to evict unannounced (capsule.core.retention)."""
        limit = self.retention_limit(tenant, project)
        if limit is not None and chunks > limit:
            raise Conflict(
                f"the text splits into {chunks} chunks, more than project '{project}' keeps (its rolling limit"
                f" is {limit}): nothing was stored. Raise the limit (PUT /v1/projects/settings retention_limit,"
                " or 'unlimited'), or ingest a shorter text.",
                details=[
                    {"field": "text", "message": f"{chunks} chunks > retention_limit {limit}"},
                    {"field": "retention_limit", "message": str(limit)},
                ],
            )

    def _write(self, tenant: str, records: list[MemoryRecord]) -> WriteOutcome:
        limit = self.retention_limit(tenant, records[0].project)
        if limit is None:  # no rolling limit: nothing is evicted
            limit = NO_LIMIT_FOR_STORE
        dedupe_after = self.clock() - timedelta(hours=limits.DEDUPE_HOURS)
        # Many chunks at once (a large document): the store's bulk insert, the same rows.
        bulk = getattr(self.store, "insert_bulk", None) if len(records) >= BULK_FROM else None
        return (bulk or self.store.insert)(records, limit=limit, dedupe_after=dedupe_after, actor=tenant)

    def _retention(self, tenant: str, req: models.StoreRequest | models.IngestRequest) -> tuple[str, datetime | None]:
        default = self.settings.ephemeral_ttl
        if req.retention == "ephemeral" and req.ttl is None and req.expires_at is None:
            default = self.governance_store.project_ttl(tenant, req.project) or default
        return for_new(
            self.clock(), retention=req.retention, ttl=req.ttl, expires_at=req.expires_at, default_ttl=default
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
            self.governance_store.supersede(
                tenant, old_id, new_id, at=self.clock(), actor=tenant, reason=f"superseded by {new_id}"
            )
        except NotFound:
            return f" Memory {old_id} was forgotten meanwhile, so nothing was superseded."
        return (
            f" It supersedes memory {old_id}, which is kept (history) but no longer returned by search or list"
            " unless include_superseded."
        )
