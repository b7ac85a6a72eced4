"""The two halves of a sync exchange, on one side's service: the memories changed after a
position (:func:`changes`), and rows that arrive merged in by the conflict rule
(:func:`apply`, see :mod:`capsule.sync.merge`). ``capsule serve`` (and the hosted API) run
them for a remote caller; ``capsule sync`` runs them on the local store.

Rows that arrive pass this side's secrets and personal-data policies before they are merged,
as a store's texts do (:mod:`capsule.guard.stored`): a memory's content, explanation and meta,
and its votes' context. A memory whose content is redacted gets its sha256 computed again and
drops the vector it carried (``pending_embedding``: this side's backfill embeds it); the answer
says so. Under ``refuse`` the request is refused (422 naming the item), nothing written."""

from __future__ import annotations

import json
from typing import Any

from ..core import wire
from ..core.errors import InvalidInput
from ..guard import stored as guard
from ..service.memory_service import MemoryService, validate
from ..store.sides import sync_store, transfer_store
from ..store.sync import Position
from ..store.transfer import FeedbackRow
from . import models as sm
from .merge import merge
from .rows import from_item, to_item

PAGE_BYTES = wire.PAGE_BUDGET  # items summed as Lambda sends them (capsule.core.wire), under its 6 MB
RULE = "latest change wins per field; counters take the larger; a forget wins over an older edit"


def changes(
    service: MemoryService,
    tenant: str,
    project: str,
    *,
    after: Position | None,
    limit: int,
    max_bytes: int = PAGE_BYTES,
) -> sm.ChangesPage:
    if not 1 <= limit <= sm.MAX_ITEMS:
        raise InvalidInput(f"limit must be between 1 and {sm.MAX_ITEMS}", field="limit")
    version = service.store.change_markers(tenant, [project]).get(project, 0)
    found = sync_store(service.store).changed_page(tenant, project, after=after, limit=limit + 1)
    votes: dict[str, list[FeedbackRow]] = {}
    for vote in transfer_store(service.store).feedback_of(tenant, [r.id for _, r in found[:limit]]):
        votes.setdefault(vote.memory_id, []).append(vote)
    items: list[dict[str, Any]] = []
    positions: list[Any] = []
    size = 0
    for position, record in found[:limit]:
        item = to_item(record, votes.get(record.id, []))
        size += wire.wrapped_json_bytes(json.dumps(item, default=str))
        if items and size > max_bytes:
            break
        items.append(item)
        positions.append(list(position))
    return sm.ChangesPage(
        project=project,
        items=items,
        positions=positions,
        version=version,
        model=service.embedder.model_id,
        more=len(items) < len(found),
    )


def _guarded(service: MemoryService, tenant: str, project: str, parsed: list) -> tuple[list, str]:
    """The arrived rows with the project's policies applied, and the sentence saying what changed."""
    policies = service.guard_policies(tenant, project)
    out, kinds, rows, reembed, votes_redacted = [], set(), 0, 0, 0
    for n, (record, votes, names) in enumerate(parsed):
        cleaned_record, cleaned = guard.clean_memory(record, policies, field=f"items[{n}].memory")
        if cleaned.changed:
            rows += 1
            kinds |= cleaned.kinds
            reembed += cleaned_record.content != record.content
        kept_votes = []
        for v, vote in enumerate(votes):
            context, found = guard.clean_text(vote.context, policies, field=f"items[{n}].votes[{v}].context")
            if found:
                votes_redacted += 1
                kinds |= found
                vote = FeedbackRow(vote.memory_id, vote.helpful, context, vote.at)
            kept_votes.append(vote)
        out.append((cleaned_record, kept_votes, names))
    if not kinds:
        return out, ""
    text = (
        f" Guard: redacted {', '.join(sorted(kinds))} before writing ({rows} memory row(s), {votes_redacted} "
        f"vote context(s)), by project '{project}''s secrets and personal-data policies."
    )
    if reembed:
        text += (
            f" {reembed} memory(ies) whose content changed got a new sha256 and did not keep the vector they "
            "carried: they are pending_embedding, embedded by this side's backfill job."
        )
    return out, text


def apply(service: MemoryService, tenant: str, request: sm.ApplyRequest | dict) -> sm.ApplyResult:
    req = validate(sm.ApplyRequest, request)
    parsed = [from_item(tenant, req.project, item.model_dump(), f"items[{n}]") for n, item in enumerate(req.items)]
    parsed, redacted = _guarded(service, tenant, req.project, parsed)
    store = sync_store(service.store)
    kept = store.current(tenant, [record.id for record, _, _ in parsed])
    base = tuple(req.base) if req.base is not None else None
    writes, conflicts, unchanged = [], [], 0
    for n, (record, _, _) in enumerate(parsed):
        position, own = kept.get(record.id, (None, None))
        if own is not None and own.project != req.project:
            raise InvalidInput(
                f"items[{n}].memory.project: memory {record.id} is in project '{own.project}' here",
                field=f"items[{n}].memory.project",
            )
        changed_here = position is not None and (base is None or position > base)
        outcome = merge(own, record, kept_changed=changed_here, own_model=service.embedder.model_id)
        if outcome.conflict:
            conflicts.append(sm.Conflict(id=record.id, fields=outcome.winners, rule=RULE))
        if outcome.record is None:
            unchanged += 1
        else:
            writes.append(outcome.record)
    if writes:
        version, quiet = store.replace_memories(tenant, req.project, writes, quiet_since=0 if base is None else base[0])
    else:
        version = service.store.change_markers(tenant, [req.project]).get(req.project, 0)
        quiet = version == (0 if base is None else base[0])
    votes = [vote for _, record_votes, _ in parsed for vote in record_votes]
    kept_votes = transfer_store(service.store).put_feedback(tenant, votes).written if votes else 0
    unknown = sorted({name for _, _, names in parsed for name in names})
    text = (
        f"Merged {len(parsed)} memory row(s) into project '{req.project}': {len(writes)} written, "
        f"{unchanged} already so, {len(conflicts)} conflict(s) resolved ({RULE})."
    )
    if unknown:
        text += f" Fields this side does not know were not kept: {', '.join(unknown)}."
    text += redacted
    return sm.ApplyResult(
        project=req.project,
        applied=len(writes),
        unchanged=unchanged,
        votes=kept_votes,
        conflicts=conflicts,
        version=version,
        quiet=quiet,
        unknown_fields=unknown,
        explanation=text,
    )
