"""What the importers from the original projects share: memories written idempotently (by a
stable id made from the source row, and by content within the project), votes with them,
vectors kept only where the model is ours, and rows refused by name and field."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..core.models import MemoryMeta
from ..core.records import MemoryRecord
from ..core.text import sha256
from ..embedders.base import Embedder
from ..store.transfer import FeedbackRow
from .export import Sources
from .report import Tally


def stable_id(source: str, tenant: str, *parts: Any) -> str:
    """The id a source row's memory takes in ``tenant``: the same on every run, so a re-run
    finds it, and another tenant's import of the same source never collides with it."""
    key = "\x1f".join(map(str, (tenant, *parts)))
    return uuid.uuid5(uuid.NAMESPACE_URL, f"capsule-import:{source}:{key}").hex


class BadValue(ValueError):
    """One field of a source row that cannot be imported."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def parse_vector(text: Any, field: str) -> np.ndarray | None:
    """pgvector's text form ``[0.1,0.2,...]`` (or a list of numbers), as float32; None for none."""
    if text is None:
        return None
    if isinstance(text, str):
        body = text.strip()
        if not (body.startswith("[") and body.endswith("]")):
            raise BadValue(field, "not a vector in pgvector's text form '[0.1,0.2,...]'")
        try:
            values = [float(x) for x in body[1:-1].split(",")] if body[1:-1].strip() else []
        except ValueError:
            raise BadValue(field, "a vector holds only numbers") from None
    elif isinstance(text, (list, tuple)):
        values = list(text)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
            raise BadValue(field, "a vector holds only numbers")
    else:
        raise BadValue(field, f"a vector, not {type(text).__name__}")
    if not values or not all(math.isfinite(x) for x in values):
        raise BadValue(field, "a vector needs at least one number, all finite")
    return np.asarray(values, dtype=np.float32)


def kept_vector(
    vector: np.ndarray | None, source_model: str, embedder: Embedder
) -> tuple[np.ndarray | None, str | None, str]:
    """(embedding, model, status): the source's vector when it was made by the model this
    deployment embeds with (same id and size), unit length; else none, for the backfill job."""
    if vector is None or embedder.model_id != source_model or len(vector) != embedder.dim:
        return None, None, "pending_embedding"
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        return None, None, "pending_embedding"
    return (vector / norm).astype(np.float32), embedder.model_id, "ready"


def clean_meta(meta: dict[str, Any], field: str) -> dict[str, Any]:
    """The source's metadata under our rules (known keys typed, unknown keys kept)."""
    try:
        return MemoryMeta.model_validate(meta).plain()
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        raise BadValue(f"{field}.{where}" if where else field, err["msg"]) from None


def new_memory(
    tenant: str,
    project: str,
    memory_id: str,
    content: str,
    *,
    at: datetime,
    path: str | None,
    meta: dict[str, Any],
    embedding: tuple[np.ndarray | None, str | None, str],
    pinned: bool = False,
    explanation: str | None = None,
    helpful: int = 0,
    unhelpful: int = 0,
) -> MemoryRecord:
    vector, model, status = embedding
    return MemoryRecord(
        id=memory_id,
        tenant=tenant,
        project=project,
        content=content,
        sha256=sha256(content),
        occurred_at=at,
        created_at=at,
        updated_at=at,
        path=path,
        embedding=vector,
        model=model,
        pinned=pinned,
        explanation=explanation,
        meta=meta,
        helpful=helpful,
        unhelpful=unhelpful,
        status=status,
    )


@dataclass
class Pending:
    """One source row's memory and the votes that come with it."""

    row: int
    record: MemoryRecord
    votes: list[FeedbackRow] = field(default_factory=list)


def guard_batch(src: Sources, tenant: str, batch: Sequence[Pending], tally: Tally) -> list[Pending]:
    """The batch with the project's secrets and personal-data policies applied, as a store's
    texts are (capsule.guard.stored): content, explanation, meta and votes' context; a redacted
    memory's sha256 is made again and its vector dropped. A row a ``refuse`` policy refuses is
    refused with its row number."""
    from ..core.errors import InvalidInput
    from ..guard import stored

    if not batch:
        return []
    policies = (src.policies or stored.store_policies(src.memories))(tenant, batch[0].record.project)
    kept = []
    for item in batch:
        try:
            record, cleaned = stored.clean_memory(item.record, policies)
            votes = []
            for vote in item.votes:
                context, kinds = stored.clean_text(vote.context, policies, field="context")
                tally.guarded("feedback", kinds)
                votes.append(FeedbackRow(vote.memory_id, vote.helpful, context, vote.at) if kinds else vote)
        except InvalidInput as refused:
            tally.refuse(item.row, refused.field or "row", refused.message)
            continue
        tally.guarded("memory", cleaned.kinds)
        tally.reembed += record.content != item.record.content
        kept.append(Pending(item.row, record, votes))
    return kept


def write_memories(src: Sources, tenant: str, batch: Sequence[Pending], tally: Tally) -> None:
    """Write the batch's new memories (all of one project) and their votes, guarded first
    (:func:`guard_batch`). A memory whose id is already here, or whose content an active memory
    of the project already holds, is skipped as present (its votes then count as present too
    when they are kept)."""
    batch = guard_batch(src, tenant, batch, tally)
    if not batch:
        return
    project = batch[0].record.project
    found = src.transfer.existing_memories(tenant, [p.record.id for p in batch])
    present = {memory_id for memory_id, own in found.items() if own}
    same_content = src.transfer.existing_content(tenant, project, [p.record.sha256 for p in batch])
    new: list[Pending] = []
    for item in batch:
        if item.record.id in present:
            tally.skipped["memory"] += 1
            _votes(src, tenant, item.votes, tally)  # kept before, or cut short by a crash: either is fine
        elif item.record.sha256 in same_content:
            tally.skipped["memory"] += 1
        else:
            same_content.add(item.record.sha256)
            new.append(item)
    src.transfer.put_memories(tenant, project, [p.record for p in new])
    tally.imported["memory"] += len(new)
    _votes(src, tenant, [v for p in new for v in p.votes], tally)


def _votes(src: Sources, tenant: str, votes: list[FeedbackRow], tally: Tally) -> None:
    if votes:
        written = src.transfer.put_feedback(tenant, votes)
        tally.imported["feedback"] += written.written
        tally.skipped["feedback"] += written.present
