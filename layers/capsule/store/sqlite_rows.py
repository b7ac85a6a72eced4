"""A memory as a row of the embedded store and back: the columns, the INSERT of a whole row,
the vector encoding and the meta fields an index reads (the store's parts all use these)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np

from ..core.clock import from_epoch, to_epoch
from ..core.records import MemoryRecord
from ..search import terms
from ..search.index import pack_row, stable_key
from . import sqlite_governance_schema, sqlite_visibility_schema

COLUMNS = (
    "id, tenant, project, content, path, chunk_index, chunk_count, embedding, model, sha256, "
    "occurred_at, created_at, updated_at, accessed_at, pinned, explanation, meta, helpful, "
    "unhelpful, deleted_at, deleted_reason, status, "
    + sqlite_governance_schema.COLUMNS
    + ", "
    + sqlite_visibility_schema.COLUMNS
)
# The INSERT of a whole row (sqlite_transfer uses it too): record_params's values, then the version.
INSERT_MEMORY = (
    f"INSERT INTO memories ({COLUMNS}, component, category, terms, terms_version, sort_key, packed, "
    f"facets, version) VALUES ({', '.join('?' * (len(COLUMNS.split(',')) + 8))})"
)

NO_VECTOR = COLUMNS.replace("embedding,", "NULL AS embedding,")


def encode_vector(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype="<f4").tobytes()


def decode_vector(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype="<f4")


def row_to_record(row: sqlite3.Row) -> MemoryRecord:
    return MemoryRecord(
        id=row["id"],
        tenant=row["tenant"],
        project=row["project"],
        content=row["content"],
        path=row["path"],
        chunk_index=row["chunk_index"],
        chunk_count=row["chunk_count"],
        embedding=decode_vector(row["embedding"]),
        model=row["model"],
        sha256=row["sha256"],
        occurred_at=from_epoch(row["occurred_at"]),
        created_at=from_epoch(row["created_at"]),
        updated_at=from_epoch(row["updated_at"]),
        accessed_at=from_epoch(row["accessed_at"]),
        pinned=bool(row["pinned"]),
        explanation=row["explanation"],
        meta=json.loads(row["meta"]),
        helpful=row["helpful"],
        unhelpful=row["unhelpful"],
        deleted_at=from_epoch(row["deleted_at"]),
        deleted_reason=row["deleted_reason"],
        status=row["status"],
        **sqlite_governance_schema.fields(row),
        **sqlite_visibility_schema.fields(row),
    )


def record_params(r: MemoryRecord, packed: bytes | None = None) -> tuple[Any, ...]:
    """INSERT_MEMORY's values but the version; ``packed`` is the row's index bytes when the
    caller made them already (sqlite_bulk packs a batch's rows in one pass)."""
    key, occurred, created = stable_key(r.id), to_epoch(r.occurred_at), to_epoch(r.created_at)
    return (
        r.id,
        r.tenant,
        r.project,
        r.content,
        r.path,
        r.chunk_index,
        r.chunk_count,
        encode_vector(r.embedding),
        r.model,
        r.sha256,
        occurred,
        created,
        to_epoch(r.updated_at),
        None,
        int(r.pinned),
        r.explanation,
        json.dumps(r.meta),
        r.helpful,
        r.unhelpful,
        None,
        None,
        r.status,
        *sqlite_governance_schema.params(r),
        *sqlite_visibility_schema.params(r),
        r.meta.get("component"),
        r.meta.get("category"),
        terms.encode_record(r),
        terms.TOKENIZER,
        key,
        pack_row(key, occurred, created, r.embedding) if packed is None else packed,
        facets(r.meta),
    )


FACETS = ("session", "author", "outcome_status")  # what an index reads of a memory's meta


def facets(meta: dict[str, Any]) -> str:
    """The meta fields a search index reads, as JSON ('' when there are none)."""
    picked = {name: meta[name] for name in FACETS if name in meta}
    return json.dumps(picked, separators=(",", ":")) if picked else ""
