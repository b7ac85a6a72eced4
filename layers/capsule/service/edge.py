"""What crosses the memory service's edge: requests validated into their models, stored
records turned into the models results carry, and the cursors of a listed page.

Re-exported by :mod:`capsule.service.memory_service`, where its callers (learning, capture, sync, the
client) import them from.
"""

from __future__ import annotations

from ..core import models
from ..core.cursor import decode_cursor, encode_cursor  # noqa: F401  (the service's modules read them here)
from ..core.fielderrors import validate  # noqa: F401  (the service's modules read it here)
from ..core.records import MemoryRecord
from ..core.retention import effective_class
from ..core.text import sha256


def to_memory(record: MemoryRecord) -> models.Memory:
    chunk = None
    if record.chunk_index is not None and record.chunk_count is not None:
        chunk = models.Chunk(index=record.chunk_index, of=record.chunk_count)
    return models.Memory(
        id=record.id,
        project=record.project,
        content=record.content,
        path=record.path,
        chunk=chunk,
        pinned=record.pinned,
        explanation=record.explanation,
        meta=record.meta,
        model=record.model,
        status=record.status,
        helpful=record.helpful,
        unhelpful=record.unhelpful,
        occurred_at=record.occurred_at,
        created_at=record.created_at,
        updated_at=record.updated_at,
        forgotten_at=record.deleted_at,
        retention=record.retention or "auto",
        effective_retention=effective_class(record.retention, record.pinned),
        expires_at=record.expires_at,
        supersedes=record.supersedes,
        superseded_by=record.superseded_by,
        sha256=sha256(record.content),
        visibility=record.visibility or "private",
        subject=record.subject,
    )
