"""What :class:`~capsule.service.memory_service.MemoryService` does to memories already stored: list a
project's page by page, get one, pin or unpin it, forget it (refused for an irreplaceable
one without force), restore it, and record feedback on it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ..core import legacy_ids, limits, models, wire
from ..core.clock import Clock
from ..core.errors import Conflict, NotFound
from ..core.records import AuditRecord, MemoryRecord
from ..core.retention import needs_force
from ..governance import audit as gov_actions
from ..governance.visibility import FULL, Reach
from ..guard.policy import Policies
from ..store.base import MemoryStore
from .edge import decode_cursor, encode_cursor, to_memory, validate


def page_kind(req: models.ListRequest) -> str:
    """What a listed page holds, as its explanation names it: 'pinned forgotten private', 'recent'..."""
    kind = (
        " ".join(w for w in ("pinned" if req.pinned_only else "", "forgotten" if req.forgotten else "") if w)
        or "recent"
    )
    if req.retention is not None:
        kind += f" {req.retention}"
    if req.visibility is not None:
        kind += f" {req.visibility}"
    return kind


class ServiceMemories:
    # Given by MemoryService's constructor.
    store: MemoryStore
    clock: Clock
    governance_store: Any  # MemoryService.governance_store
    retention_limit: Callable[[str, str], int | None]  # ServiceProjects.retention_limit (None: no limit)
    project_of: Callable[[str, str], str]  # ServiceProjects.project_of
    guard_policies: Callable[[str, str], Policies]  # ServiceProjects.guard_policies

    def list_memories(
        self, tenant: str, request: models.ListRequest | dict, *, reach: Reach = FULL
    ) -> models.ListResult:
        req = validate(models.ListRequest, request)
        req = req.model_copy(update={"project": self.project_of(tenant, req.project)})  # one checkout, one project
        reach.require_project(req.project)
        after = decode_cursor(req.cursor) if req.cursor else None
        by_class: dict[str, Any] = {} if req.retention is None else {"retention": req.retention}
        seen: dict[str, Any] = {
            k: v
            for k, v in (
                ("visibility", reach.visibilities(req.visibility)),
                ("subjects", reach.subjects_for(req.subject)),
            )
            if v
        }
        rows = self.store.list(
            tenant,
            req.project,
            pinned_only=req.pinned_only,
            after=after,
            limit=req.limit + 1,
            forgotten=req.forgotten,
            **by_class,
            **seen,
        )
        page, more = rows[: req.limit], len(rows) > req.limit
        memories = [to_memory(r) for r in page]
        # 100 memories of 64 KiB pass a Lambda answer's 6 MB: the page ends where its bytes, as
        # Lambda sends them, fill the budget (capsule.core.wire), and the cursor goes on from there.
        kept = wire.fitting(wire.wrapped_json_bytes(m.model_dump_json()) for m in memories)
        if kept < len(page):
            page, memories, more = page[:kept], memories[:kept], True
        return models.ListResult(
            memories=memories,
            next_cursor=encode_cursor(page[-1]) if more else None,
            explanation=f"{len(page)} {page_kind(req)} {'memory' if len(page) == 1 else 'memories'} of project"
            f" '{req.project}', newest first" + ("; more follow the cursor." if more else "."),
        )

    def get_record(self, tenant: str, memory_id: str) -> MemoryRecord:
        """An active memory, or a superseded one (kept as history); NotFound otherwise."""
        memory_id = legacy_ids.memory_id(self.store, tenant, memory_id)  # an imported Vector Bridge chunk_id too
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

    def pin(self, tenant: str, memory_id: str, pinned: bool = True) -> models.MemoryResult:
        memory_id = legacy_ids.memory_id(self.store, tenant, memory_id)  # an imported Vector Bridge chunk_id too
        record = self.store.set_pinned(tenant, memory_id, pinned, at=self.clock(), actor=tenant)
        text = (
            "Pinned: it is never evicted by the rolling limit."
            if pinned
            else "Unpinned: the rolling limit may evict it once it is the oldest."
        )
        return models.MemoryResult(memory=to_memory(record), explanation=f"{text} ({memory_id})")

    def forget(
        self, tenant: str, memory_id: str, request: models.ForgetRequest | dict | None = None
    ) -> models.MemoryResult:
        memory_id = legacy_ids.memory_id(self.store, tenant, memory_id)  # an imported Vector Bridge chunk_id too
        req = validate(models.ForgetRequest, request or {})
        reason = req.reason or "forgotten by request"
        if not req.force:
            self._refuse_unforced(tenant, self.store.get(tenant, memory_id), reason)
        record = self.store.forget(tenant, memory_id, at=self.clock(), actor=tenant, reason=reason)
        assert record.deleted_at is not None  # forgotten just now
        until = record.deleted_at + timedelta(days=limits.FORGET_RECOVERABLE_DAYS)
        return models.MemoryResult(
            memory=to_memory(record),
            explanation=(
                f"Forgot {memory_id} ({reason}). Search and list no longer show it;"
                f" restore brings it back until {until.date().isoformat()}, then it is purged."
            ),
        )

    def _refuse_unforced(self, tenant: str, record: MemoryRecord, reason: str) -> None:
        if not needs_force(record.retention, record.pinned):
            return
        why = "irreplaceable"
        self.governance_store.add_audit(
            AuditRecord(
                tenant=tenant,
                memory_id=record.id,
                project=record.project,
                action=gov_actions.REFUSE,
                actor=tenant,
                reason=f"forget refused: the memory is {why} and force was not given ({reason})",
                at=self.clock(),
            )
        )
        raise Conflict(
            f"memory {record.id} is {why}: forget it with force true, or change its retention first",
            details=[{"field": "force", "message": "required to forget an irreplaceable memory"}],
        )

    def restore(self, tenant: str, memory_id: str) -> models.RestoreResult:
        memory_id = legacy_ids.memory_id(self.store, tenant, memory_id)  # an imported Vector Bridge chunk_id too
        record = self.store.restore(tenant, memory_id, at=self.clock(), actor=tenant)
        limit = self.retention_limit(tenant, record.project)
        held = next((s.memories for s in self.store.projects(tenant, only=record.project)), 0)
        text = f"Restored {memory_id}."
        if limit is not None and held > limit:
            # A restore undoes a forget or an eviction: it never makes another memory go in its place.
            text += (
                f" Project '{record.project}' now holds {held} memories, over its limit of {limit}; nothing"
                " else was evicted. The next store evicts (naming them in its answer) the oldest unpinned"
                " ones beyond the limit, which may be this one: pin it to keep it, or raise the limit."
            )
        return models.RestoreResult(
            memory=to_memory(record),
            explanation=text,
            over_limit=limit is not None and held > limit,
            memories=held,
            retention_limit=limit,
        )

    def feedback(self, tenant: str, memory_id: str, request: models.FeedbackRequest | dict) -> models.MemoryResult:
        memory_id = legacy_ids.memory_id(self.store, tenant, memory_id)  # an imported Vector Bridge chunk_id too
        req = validate(models.FeedbackRequest, request)
        context = req.context
        if context:  # a feedback's context is a text that enters too: guarded as a memory's (capsule.guard)
            from ..guard.policy import guard_text

            project = self.store.get(tenant, memory_id, include_forgotten=True).project
            context = guard_text(context, self.guard_policies(tenant, project), field="context").text
        record = self.store.add_feedback(tenant, memory_id, helpful=req.helpful, context=context, at=self.clock())
        vote = "helpful" if req.helpful else "not helpful"
        return models.MemoryResult(
            memory=to_memory(record),
            explanation=(
                f"Recorded '{vote}' for {memory_id} ({record.helpful} helpful,"
                f" {record.unhelpful} not); search ranks it by the Wilson lower bound of that ratio."
            ),
        )
