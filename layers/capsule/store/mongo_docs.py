"""MongoDB documents <-> records, and embeddings as BSON binary vectors.

Embeddings are stored as BSON binary subtype 9 (a float32 vector), the form Atlas Vector
Search indexes, and never as arrays of doubles (13x slower to decode, 2.25x larger).
A subtype 9 payload is a 2-byte header (dtype 0x27 for float32, then the padding count)
followed by little-endian float32s, so decoding is one zero-copy ``np.frombuffer`` at
offset 2; ``Binary.as_vector(return_numpy=True)`` builds a ``BinaryVector`` first and takes
twice as long (``scripts/bench_vector_decode.py``; joining all payloads for one frombuffer
is slower still, as the join copies every vector twice). Times are epoch seconds (doubles) as in SQLite, so
cursors and comparisons are exact; the TTL indexes read separate BSON date fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np
from bson.binary import Binary, BinaryVectorDtype

from ..core.clock import from_epoch, to_epoch
from ..core.records import MemoryRecord

VECTOR_SUBTYPE = 9
_FLOAT32 = BinaryVectorDtype.FLOAT32.value[0]  # the header's dtype byte, 0x27

# Fields a document carries that the record does not (markers and TTL dates).
INTERNAL_FIELDS = ("_id", "seq", "active", "pending", "pending_on", "deleted_on")


def encode_vector(vector: np.ndarray | None) -> Binary | None:
    if vector is None:
        return None
    return Binary.from_vector(np.asarray(vector, dtype=np.float32), BinaryVectorDtype.FLOAT32)


def decode_vector(value: Any) -> np.ndarray | None:
    """A float32 array viewing the document's bytes (no copy, no Python floats)."""
    if value is None:
        return None
    if isinstance(value, Binary) and value.subtype == VECTOR_SUBTYPE:
        if value[0] != _FLOAT32 or value[1] != 0:
            raise ValueError(f"not a packed float32 vector (header {bytes(value[:2])!r})")
        return np.frombuffer(value, dtype="<f4", offset=2)
    if isinstance(value, (bytes, bytearray)):  # plain binary (subtype 0), as SQLite keeps it
        return np.frombuffer(value, dtype="<f4")
    return np.asarray(value, dtype=np.float32)  # tolerated on read only: lists of doubles


def record_to_doc(record: MemoryRecord, *, seq: int) -> dict[str, Any]:
    return {
        "id": record.id,
        "tenant": record.tenant,
        "project": record.project,
        "content": record.content,
        "path": record.path,
        "chunk_index": record.chunk_index,
        "chunk_count": record.chunk_count,
        "embedding": encode_vector(record.embedding),
        "model": record.model,
        "sha256": record.sha256,
        "occurred_at": to_epoch(record.occurred_at),
        "created_at": to_epoch(record.created_at),
        "updated_at": to_epoch(record.updated_at),
        "accessed_at": None,
        "pinned": bool(record.pinned),
        "explanation": record.explanation,
        "meta": dict(record.meta),
        "helpful": record.helpful,
        "unhelpful": record.unhelpful,
        "deleted_at": None,
        "deleted_reason": None,
        "status": record.status,
        "seq": seq,
        "active": True,
        **governance_fields(record),
        **visibility_fields(record),
    }


def governance_fields(record: MemoryRecord) -> dict[str, Any]:
    """The governance part of a memory document (capsule.governance)."""
    return {
        "retention": record.retention or "auto",
        "expires_at": None if record.expires_at is None else to_epoch(record.expires_at),
        "supersedes": record.supersedes,
        "superseded_by": record.superseded_by,
    }


def visibility_fields(record: MemoryRecord) -> dict[str, Any]:
    """Who may read it (capsule.governance.visibility); a document without them is private."""
    return {"visibility": record.visibility or "private", "subject": record.subject}


def _time(value: float | None) -> datetime | None:
    return from_epoch(value)


def doc_to_record(doc: Mapping[str, Any]) -> MemoryRecord:
    return MemoryRecord(
        id=doc["id"],
        tenant=doc["tenant"],
        project=doc["project"],
        content=doc["content"],
        path=doc.get("path"),
        chunk_index=doc.get("chunk_index"),
        chunk_count=doc.get("chunk_count"),
        embedding=decode_vector(doc.get("embedding")),
        model=doc.get("model"),
        sha256=doc["sha256"],
        occurred_at=from_epoch(doc["occurred_at"]),
        created_at=from_epoch(doc["created_at"]),
        updated_at=from_epoch(doc["updated_at"]),
        accessed_at=_time(doc.get("accessed_at")),
        pinned=bool(doc.get("pinned")),
        explanation=doc.get("explanation"),
        meta=dict(doc.get("meta") or {}),
        helpful=int(doc.get("helpful", 0)),
        unhelpful=int(doc.get("unhelpful", 0)),
        deleted_at=_time(doc.get("deleted_at")),
        deleted_reason=doc.get("deleted_reason"),
        status=doc.get("status", "ready"),
        retention=doc.get("retention") or "auto",
        expires_at=_time(doc.get("expires_at")),
        supersedes=doc.get("supersedes"),
        superseded_by=doc.get("superseded_by"),
        visibility=doc.get("visibility") or "private",
        subject=doc.get("subject"),
    )


# Reads never need the markers back.
RECORD_PROJECTION = {name: 0 for name in INTERNAL_FIELDS}
