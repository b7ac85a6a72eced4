"""Capture: conversation events in, candidates for memories out, a person (or a threshold)
deciding which become memories.

:class:`CaptureService` is given the memory service (whose store, search and clock it
uses) and the candidate queue. A candidate already held by the project's queue (pending,
approved or rejected) is not proposed again; one whose text the project already keeps as
a memory is not proposed at all.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import datetime

from ..core.errors import CapsuleError, InvalidInput
from ..core.text import sha256
from ..guard.policy import GUARD_KEY, Policies, guard_text
from ..service.memory_service import MemoryService, validate
from ..store.capture import CandidateRecord, CandidateStore
from . import models as cm
from .scoring import Event, Scored, score_event

DEFAULT_THRESHOLD = 0.8
SAME_FACT = 0.8  # share of words in common above which a stored memory already says it
_PERMANENT = {"decision", "convention", "preference", "fact"}
_WORDS = re.compile(r"[a-z0-9_]+")


def candidate_key(text: str) -> str:
    """The text's identity in a queue: its words, lower case, in order."""
    return sha256(" ".join(_WORDS.findall(text.lower())))


def same_fact(a: str, b: str) -> bool:
    """Do two texts say the same thing (nearly the same words)?"""
    left, right = set(_WORDS.findall(a.lower())), set(_WORDS.findall(b.lower()))
    return bool(left and right) and len(left & right) / len(left | right) >= SAME_FACT


def to_candidate(r: CandidateRecord) -> cm.Candidate:
    return cm.Candidate(
        id=r.id,
        project=r.project,
        text=r.text,
        score=r.score,
        reason=r.reason,
        type=r.kind,
        retention="permanent" if r.kind in _PERMANENT else "replaceable",
        tags=list(r.tags),
        status=r.status,
        role=r.role,
        session=r.session,
        occurred_at=r.occurred_at,
        created_at=r.created_at,
        decided_at=r.decided_at,
        memory_id=r.memory_id,
        note=r.note,
    )


def encode_cursor(record: CandidateRecord) -> str:
    return f"{record.created_at.timestamp():.6f}~{record.id}"


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    if not re.fullmatch(cm.CANDIDATE_CURSOR.strip("^$"), cursor):
        raise InvalidInput("cursor: is not a cursor this service returned", field="cursor")
    from ..core.clock import from_epoch

    at, _, candidate_id = cursor.partition("~")
    return from_epoch(float(at)), candidate_id


class CaptureService:
    def __init__(
        self, memories: MemoryService, queue: CandidateStore, *, new_id: Callable[[], str] = lambda: uuid.uuid4().hex
    ) -> None:
        self.memories, self.queue, self._new_id = memories, queue, new_id

    # ---- proposing -------------------------------------------------------------

    def _stored_as(self, tenant: str, project: str, text: str) -> str | None:
        """The id of a memory of the project that already says ``text``, if any."""
        found = self.memories.search(tenant, {"project": project, "query": text[:2000], "k": 3, "mode": "bm25"})
        return next((hit.id for hit in found.results if same_fact(hit.content, text)), None)

    def _record(
        self, tenant: str, project: str, event: cm.CaptureEvent, scored: Scored, policies: Policies
    ) -> CandidateRecord | cm.Skipped:
        """The candidate to queue, its text guarded as a stored memory's is (capsule.guard): a
        secret redacted under ``redact`` never reaches the queue; under ``refuse`` it is skipped."""
        try:
            guarded = guard_text(scored.text, policies, field="events")
        except InvalidInput as refused:
            shown = guard_text(scored.text, Policies(secrets="redact", pii="redact")).text
            return cm.Skipped(text=shown, why=f"not proposed: {refused}")
        return CandidateRecord(
            id=self._new_id(),
            tenant=tenant,
            project=project,
            key=candidate_key(guarded.text),
            text=guarded.text,
            score=scored.score,
            reason=scored.reason,
            kind=scored.kind,
            tags=list(scored.tags),
            created_at=self.memories.clock(),
            role=event.role,
            session=event.session,
            occurred_at=event.time,
            extra={} if guarded.empty else {GUARD_KEY: guarded.report},
        )

    def threshold(self, tenant: str, project: str) -> float:
        own = self.queue.threshold(tenant, project)
        return DEFAULT_THRESHOLD if own is None else own

    def capture(self, tenant: str, request: cm.CaptureRequest | dict) -> cm.CaptureResult:
        req = validate(cm.CaptureRequest, request)
        req.project = self.memories.project_of(tenant, req.project)  # one checkout, one project
        fresh: dict[str, CandidateRecord] = {}
        skipped: list[cm.Skipped] = []
        policies = self.memories.guard_policies(tenant, req.project)
        for event in req.events:
            scored = score_event(Event(event.role, event.text, tuple(event.tool_results)))
            if scored is None:
                continue
            record = self._record(tenant, req.project, event, scored, policies)
            if isinstance(record, cm.Skipped):
                skipped.append(record)
            elif record.key in fresh:
                skipped.append(cm.Skipped(text=record.text, why="proposed by an earlier event of this capture"))
            else:
                fresh[record.key] = record
        held = self.queue.statuses(tenant, req.project, list(fresh))
        for key, status in held.items():
            skipped.append(cm.Skipped(text=fresh.pop(key).text, why=f"already {status} in the capture queue"))
        for key, record in list(fresh.items()):
            memory_id = self._stored_as(tenant, req.project, record.text)
            if memory_id is not None:
                del fresh[key]
                skipped.append(cm.Skipped(text=record.text, why="already stored as a memory", memory_id=memory_id))
        for key, status in self.queue.add(list(fresh.values())).items():  # another capture raced us to it
            skipped.append(cm.Skipped(text=fresh.pop(key).text, why=f"already {status} in the capture queue"))
        threshold = self.threshold(tenant, req.project)
        approved = self._auto_approve(tenant, list(fresh.values()), threshold) if req.auto_approve else []
        queued = [to_candidate(self.queue.get(tenant, r.id)) for r in fresh.values()]
        return cm.CaptureResult(
            candidates=queued,
            skipped=skipped,
            approved=approved,
            threshold=threshold,
            explanation=self._explain(req, queued, skipped, approved, threshold),
        )

    def _auto_approve(self, tenant: str, records: list[CandidateRecord], threshold: float) -> list[str]:
        approved = []
        for record in records:
            if record.score >= threshold:
                self.approve(tenant, record.id, {}, note=f"approved at once: score {record.score} >= {threshold}")
                approved.append(record.id)
        return approved

    @staticmethod
    def _explain(
        req: cm.CaptureRequest,
        queued: list[cm.Candidate],
        skipped: list[cm.Skipped],
        approved: list[str],
        threshold: float,
    ) -> str:
        text = (
            f"Scored {len(req.events)} event(s) of project '{req.project}': {len(queued)} candidate(s) proposed, "
            f"{len(skipped)} skipped (already queued, decided or stored)."
        )
        if req.auto_approve:
            text += (
                f" Approved {len(approved)} at or above the project's threshold {threshold}; the rest wait as pending."
            )
        elif queued:
            text += " They wait as pending: approve or reject each by id."
        return text

    # ---- deciding --------------------------------------------------------------

    def approve(
        self,
        tenant: str,
        candidate_id: str,
        request: cm.ApproveRequest | dict | None = None,
        *,
        note: str | None = None,
    ) -> cm.DecisionResult:
        req = validate(cm.ApproveRequest, request or {})
        edited = req.text is not None and req.text != self.queue.get(tenant, candidate_id).text
        record = self.queue.decide(
            tenant,
            candidate_id,
            "approved",
            at=self.memories.clock(),
            text=req.text,
            note=note or ("edited on approval" if edited else None),
        )
        meta = {
            "type": req.type or record.kind,
            "tags": req.tags if req.tags is not None else record.tags,
            "source": "capture",
            "author": record.role,
        }
        if record.session:
            meta["session"] = record.session
        try:
            stored = self.memories.store_memory(
                tenant,
                {
                    "project": record.project,
                    "content": record.text,
                    "pinned": req.pinned,
                    "meta": meta,
                    "explanation": f"Captured from a conversation: {record.reason}.",
                    "occurred_at": record.occurred_at,
                },
            )
        except CapsuleError:
            self.queue.undo(tenant, candidate_id)  # nothing is lost: it waits as pending again
            raise
        record = self.queue.link(tenant, candidate_id, stored.memory.id)
        how = "edited and " if edited else ""
        return cm.DecisionResult(
            candidate=to_candidate(record),
            memory=stored.memory,
            explanation=f"Candidate {candidate_id} {how}approved: {stored.explanation}",
        )

    def reject(
        self, tenant: str, candidate_id: str, request: cm.RejectRequest | dict | None = None
    ) -> cm.DecisionResult:
        req = validate(cm.RejectRequest, request or {})
        record = self.queue.decide(tenant, candidate_id, "rejected", at=self.memories.clock(), note=req.reason)
        return cm.DecisionResult(
            candidate=to_candidate(record),
            explanation=f"Candidate {candidate_id} rejected: it will not be proposed again.",
        )

    def candidates(
        self,
        tenant: str,
        *,
        project: str | None = None,
        status: str | None = "pending",
        cursor: str | None = None,
        limit: int = 50,
    ) -> cm.CandidateList:
        if status is not None and status not in ("pending", "approved", "rejected"):
            raise InvalidInput("status must be pending, approved or rejected", field="status")
        if not 1 <= limit <= 200:
            raise InvalidInput("limit must be between 1 and 200", field="limit")
        before = None if cursor is None else decode_cursor(cursor)
        project = self.memories.project_of(tenant, project) if project else project
        found = self.queue.list(tenant, project, status, before=before, limit=limit + 1)
        more = len(found) > limit
        page = found[:limit]
        where = f" of project '{project}'" if project else ""
        return cm.CandidateList(
            candidates=[to_candidate(r) for r in page],
            next_cursor=encode_cursor(page[-1]) if more else None,
            explanation=f"{len(page)} {status or 'capture'} candidate(s){where}, newest first.",
        )

    def get(self, tenant: str, candidate_id: str) -> cm.Candidate:
        return to_candidate(self.queue.get(tenant, candidate_id))

    def set_threshold(self, tenant: str, request: cm.ThresholdRequest | dict) -> cm.ThresholdResult:
        req = validate(cm.ThresholdRequest, request)
        self.queue.set_threshold(tenant, req.project, req.threshold, at=self.memories.clock())
        return cm.ThresholdResult(
            project=req.project,
            threshold=req.threshold,
            explanation=f"Capture in project '{req.project}' approves at once (when asked) "
            f"candidates scoring {req.threshold} or more.",
        )
