"""Update in place with history, revert, and the supersession chain.

An update writes the new state over the memory and keeps the old one as its next version
(:meth:`capsule.store.governance.GovernanceStore.replace`), in one write that also audits it.
A content change is re-embedded (or left pending for the backfill job when the embedder is
down) and re-indexed: the write stamps the project's version, so warm indexes reload the row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from ..config import Settings
from ..core import limits
from ..core.errors import InvalidInput, NotFound, PreconditionFailed
from ..core.records import MemoryRecord
from ..core.retention import effective_class
from ..core.retention_policy import for_update
from ..core.text import sha256
from ..governance import audit as actions
from ..governance import models as gm
from ..governance.intake import admit
from ..governance.models import check_if_match
from .context import text_to_embed
from .edge import to_memory, validate


class Service(Protocol):
    """What history reads of the :class:`~capsule.service.memory_service.MemoryService` it serves."""

    store: Any
    clock: Callable[[], Any]
    settings: Settings

    @property
    def governance_store(self) -> Any: ...

    def guard_policies(self, tenant: str, project: str) -> Any: ...

    @property
    def embedder(self) -> Any: ...

    def get_record(self, tenant: str, memory_id: str) -> MemoryRecord: ...

    def _embed(self, texts: list[str]) -> tuple[Any, Any]: ...


MAX_CHAIN = 20  # supersession links walked for one hit


def content_sha(record: MemoryRecord) -> str:
    return sha256(record.content)


def _dedupe_key(before: MemoryRecord, content: str) -> str:
    """The stored key keeps its rule: an import's key includes when it happened."""
    if before.sha256 == sha256(before.content):
        return sha256(content)
    return sha256(f"{content}\x00{before.occurred_at.isoformat()}")


class History:
    """Update, history and revert for one :class:`~capsule.service.memory_service.MemoryService`."""

    def __init__(self, service: Service) -> None:
        self.service = service

    # ---- update ------------------------------------------------------------

    def update(
        self,
        tenant: str,
        memory_id: str,
        request: gm.UpdateRequest | dict,
        *,
        if_match: str | None = None,
        actor: str | None = None,
    ) -> gm.UpdateResult:
        expected = check_if_match(if_match)
        req = validate(gm.UpdateRequest, request)
        before = self.service.store.get(tenant, memory_id)
        self._precondition(before, expected)
        now = self.service.clock()
        retention, expires_at = for_update(
            now,
            current=before.retention,
            current_expiry=before.expires_at,
            retention=req.retention,
            ttl=req.ttl,
            expires_at=req.expires_at,
            default_ttl=self.service.settings.ephemeral_ttl,
        )
        meta = before.meta if req.meta is None else req.meta.plain()
        if req.tags is not None:
            meta = {**meta, "tags": list(req.tags)}
        content = before.content if req.content is None else admit(tenant, before.project, req.content).content
        explanation = before.explanation if req.explanation is None else req.explanation
        if req.content is not None or req.explanation is not None or req.meta is not None:
            content, explanation, meta = self._guarded(tenant, before.project, content, explanation, meta)
        after = replace(
            before,
            content=content,
            meta=meta,
            retention=retention,
            expires_at=expires_at,
            explanation=explanation,
            updated_at=now,
            visibility=req.visibility or before.visibility,
            subject=req.subject or before.subject,
        )
        self._refuse_public(after, actor or tenant)
        return self._write(before, after, actor or tenant, req.reason, revert_of=None)

    def _refuse_public(self, after: MemoryRecord, actor: str) -> None:
        """A memory with flagged data is not made (or kept, by a content change) public: 409, audited."""
        from ..core.records import AuditRecord
        from ..governance.visibility import public_refusal

        refused = public_refusal(after.visibility, after.meta, f"memory {after.id}")
        if refused is None:
            return
        self.service.governance_store.add_audit(
            AuditRecord(
                tenant=after.tenant,
                memory_id=after.id,
                project=after.project,
                action=actions.REFUSE,
                actor=actor,
                reason=f"made public refused: {refused.message}",
                at=after.updated_at,
            )
        )
        raise refused

    def _guarded(
        self, tenant: str, project: str, content: str, explanation: str | None, meta: dict
    ) -> tuple[str, str | None, dict]:
        """An update passes the project's secrets and personal-data policies as a store does
        (capsule.guard): redacted, flagged or refused before it is embedded or written."""
        from ..guard.apply import guard_write
        from ..guard.policy import GUARD_KEY

        own = {k: v for k, v in meta.items() if k != GUARD_KEY}  # the findings are made anew
        guarded = guard_write([content], explanation, own, self.service.guard_policies(tenant, project))
        return guarded.texts[0], guarded.explanation, guarded.meta_for(0)

    @staticmethod
    def _precondition(before: MemoryRecord, expected: str | None) -> None:
        if expected is not None and expected != content_sha(before):
            raise PreconditionFailed(
                f"If-Match: memory {before.id} has changed (its sha256 is now {content_sha(before)}); read it"
                " again and retry",
                details=[{"field": "If-Match", "message": "does not match the current sha256"}],
            )

    def _write(
        self, before: MemoryRecord, after: MemoryRecord, actor: str, reason: str | None, *, revert_of: int | None
    ) -> gm.UpdateResult:
        reembedded = after.content != before.content
        if reembedded:
            after = self._reembed(before, after)
        changed = _changes(before, after)
        if not changed:
            current = (
                len(self.service.governance_store.versions(before.tenant, before.id, limit=limits.MAX_VERSIONS_LISTED))
                + 1
            )
            return gm.UpdateResult(
                memory=to_memory(before),
                version=current,
                explanation=f"Nothing changed: memory {before.id} already holds these values.",
            )
        action = (
            actions.REVERT
            if revert_of
            else (
                actions.UPDATE
                if set(changed) - {"retention", "expires_at", "visibility", "subject"}
                else actions.RETENTION
                if set(changed) - {"visibility", "subject"}
                else actions.VISIBILITY
            )
        )
        why = reason or (f"reverted to version {revert_of}" if revert_of else f"changed {', '.join(changed)}")
        if action == actions.VISIBILITY:
            why = f"{visibility_change(before, after)}{f' ({reason})' if reason else ''}"
        gov = self.service.governance_store
        record = gov.replace(before, after, action=action, actor=actor, reason=why)
        if action == actions.UPDATE and {"retention", "expires_at"} & set(changed):
            self._audit_class(before, record, actor)
        if action != actions.VISIBILITY and {"visibility", "subject"} & set(changed):
            self._audit_visibility(before, record, actor)
        number = len(gov.versions(before.tenant, before.id, limit=10**9)) + 1
        text = (
            f"Reverted memory {before.id} to version {revert_of}"
            if revert_of
            else f"Updated memory {before.id} ({', '.join(changed)})"
        )
        text += f"; it is now version {number} and version {number - 1} is kept in its history."
        if reembedded:
            text += (
                " The new content was re-embedded and re-indexed."
                if record.status == "ready"
                else " No embedding could be made; it is found by keyword now and the backfill job will embed it."
            )
        return gm.UpdateResult(memory=to_memory(record), version=number, reembedded=reembedded, explanation=text)

    def _audit_class(self, before: MemoryRecord, after: MemoryRecord, actor: str) -> None:
        from ..core.records import AuditRecord

        reason = f"retention {before.retention} -> {after.retention}"
        if after.expires_at is not None:
            reason += f", expires {after.expires_at.isoformat()}"
        self.service.governance_store.add_audit(
            AuditRecord(
                tenant=before.tenant,
                memory_id=before.id,
                project=before.project,
                action=actions.RETENTION,
                actor=actor,
                reason=reason,
                at=after.updated_at,
            )
        )

    def _audit_visibility(self, before: MemoryRecord, after: MemoryRecord, actor: str) -> None:
        from ..core.records import AuditRecord

        self.service.governance_store.add_audit(
            AuditRecord(
                tenant=before.tenant,
                memory_id=before.id,
                project=before.project,
                action=actions.VISIBILITY,
                actor=actor,
                reason=visibility_change(before, after),
                at=after.updated_at,
            )
        )

    def _reembed(self, before: MemoryRecord, after: MemoryRecord) -> MemoryRecord:
        s = self.service
        after = replace(
            after, sha256=_dedupe_key(before, after.content), embedding=None, model=None, status="pending_embedding"
        )
        vectors, _ = s._embed([text_to_embed(s.store, after, max_words=s.settings.session_context_words)])
        if vectors is not None:
            after = replace(after, embedding=vectors[0], model=s.embedder.model_id, status="ready")
        return after

    # ---- history and revert ---------------------------------------------------

    def history(self, tenant: str, memory_id: str) -> gm.HistoryResult:
        record = self.service.get_record(tenant, memory_id)
        kept = self.service.governance_store.versions(tenant, memory_id, limit=limits.MAX_VERSIONS_LISTED)
        versions = [_version(v.number, v) for v in kept]
        versions.append(
            gm.Version(
                version=(kept[-1].number if kept else 0) + 1,
                current=True,
                content=record.content,
                sha256=content_sha(record),
                path=record.path,
                explanation=record.explanation,
                meta=record.meta,
                retention=record.retention,
                effective_retention=effective_class(record.retention, record.pinned),
                expires_at=record.expires_at,
                pinned=record.pinned,
                created_at=record.updated_at,
            )
        )
        text = f"Memory {memory_id} has {len(versions)} version{'s' if len(versions) != 1 else ''}, oldest first"
        if record.superseded_by:
            text += f"; it was superseded by {record.superseded_by}"
        return gm.HistoryResult(memory=to_memory(record), versions=versions, explanation=text + ".")

    def revert(
        self,
        tenant: str,
        memory_id: str,
        request: gm.RevertRequest | dict,
        *,
        if_match: str | None = None,
        actor: str | None = None,
    ) -> gm.UpdateResult:
        expected = check_if_match(if_match)
        req = validate(gm.RevertRequest, request)
        before = self.service.store.get(tenant, memory_id)
        self._precondition(before, expected)
        kept = {v.number: v for v in self.service.governance_store.versions(tenant, memory_id, limit=10**9)}
        if req.version == len(kept) + 1:
            raise InvalidInput(
                f"version: {req.version} is the current version; there is nothing to revert", field="version"
            )
        if req.version not in kept:
            raise NotFound(f"memory {memory_id} has no version {req.version} (it has {len(kept) + 1})")
        old = kept[req.version]
        after = replace(
            before,
            content=old.content,
            meta=dict(old.meta),
            explanation=old.explanation,
            retention=old.retention,
            expires_at=old.expires_at,
            updated_at=self.service.clock(),
        )
        self._refuse_public(after, actor or tenant)
        return self._write(before, after, actor or tenant, req.reason, revert_of=req.version)

    # ---- supersession ------------------------------------------------------------

    def chain(self, tenant: str, record: MemoryRecord) -> list[MemoryRecord]:
        """The memories ``record`` superseded, newest first (a bounded walk)."""
        found: list[MemoryRecord] = []
        seen, next_id = {record.id}, record.supersedes
        while next_id and next_id not in seen and len(found) < MAX_CHAIN:
            seen.add(next_id)
            try:
                older = self.service.store.get(tenant, next_id, include_forgotten=True)
            except NotFound:
                break
            found.append(older)
            next_id = older.supersedes
        return found


def visibility_change(before: MemoryRecord, after: MemoryRecord) -> str:
    """The audit reason of a visibility or subject change: what it was and what it is."""
    parts = []
    if before.visibility != after.visibility:
        parts.append(f"visibility {before.visibility} -> {after.visibility}")
    if before.subject != after.subject:
        parts.append(f"subject {before.subject or '(none)'} -> {after.subject or '(none)'}")
    return ", ".join(parts)


def _changes(before: MemoryRecord, after: MemoryRecord) -> list[str]:
    names = ("content", "meta", "explanation", "retention", "expires_at", "visibility", "subject")
    return [n for n in names if getattr(before, n) != getattr(after, n)]


def _version(number: int, v: Any) -> gm.Version:
    return gm.Version(
        version=number,
        content=v.content,
        sha256=sha256(v.content),
        path=v.path,
        explanation=v.explanation,
        meta=v.meta,
        retention=v.retention,
        effective_retention=effective_class(v.retention, v.pinned),
        expires_at=v.expires_at,
        pinned=v.pinned,
        created_at=v.created_at,
        replaced_at=v.replaced_at,
        actor=v.actor,
        reason=v.reason,
    )
