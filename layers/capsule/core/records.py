"""Plain data that moves between the service and the stores (no validation in hot loops)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np


@dataclass(slots=True)
class MemoryRecord:
    id: str
    tenant: str
    project: str
    content: str
    sha256: str
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    path: str | None = None
    chunk_index: int | None = None
    chunk_count: int | None = None
    embedding: np.ndarray | None = None  # float32, L2-normalised
    model: str | None = None
    pinned: bool = False
    explanation: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    helpful: int = 0
    unhelpful: int = 0
    accessed_at: datetime | None = None
    deleted_at: datetime | None = None
    deleted_reason: str | None = None
    status: str = "ready"  # ready | pending_embedding
    # Governance (capsule.governance): the declared retention class (auto: pinned means
    # irreplaceable, else replaceable), when an ephemeral memory expires, and the chain of
    # supersession (a superseded memory is kept, not active, with deleted_reason 'superseded').
    retention: str = "auto"
    expires_at: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    # Visibility and subject (capsule.governance.visibility): how far it may be read in its
    # tenant, and the person or end-user it is about.
    visibility: str = "private"
    subject: str | None = None


@dataclass(slots=True)
class Filters:
    """Search filters, already validated."""

    component: str | None = None
    category: str | None = None
    tags: tuple[str, ...] = ()
    path_prefix: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    retention: str | None = None  # an effective class (capsule.core.retention.effective_class)
    visibility: tuple[str, ...] = ()  # only these visibilities (empty: any)
    subjects: tuple[str, ...] = ()  # only memories about one of these subjects (empty: any)


@dataclass(slots=True)
class WriteOutcome:
    """What one atomic insert did."""

    inserted: list[str] = field(default_factory=list)
    duplicates: dict[str, str] = field(default_factory=dict)  # new id -> existing id
    evicted: list[str] = field(default_factory=list)
    active_after: int = 0
    limit: int = 0
    evicted_classes: dict[str, str] = field(default_factory=dict)  # evicted id -> its effective class


@dataclass(slots=True)
class ProjectStats:
    project: str
    memories: int
    pinned: int
    forgotten: int
    retention_limit: int | None
    last_activity: datetime | None


@dataclass(frozen=True, slots=True)
class KeywordStats:
    """BM25's statistics over a whole search scope, counted by a search engine's index (Atlas
    Search), for ranking a shortlist of it by the rarity of its terms in the scope instead of in
    the few hundred memories shortlisted: ``n`` memories, ``df`` holding each term; ``avgdl`` their
    average length (None: the shortlist's)."""

    n: int
    avgdl: float | None
    df: dict[str, int]


@dataclass(slots=True)
class AuditRecord:
    tenant: str
    memory_id: str
    project: str
    action: str  # forget | restore | evict | pin | unpin | purge | capsule.governance.audit.ACTIONS
    actor: str
    reason: str
    at: datetime


@dataclass(slots=True)
class IndexColumns:
    """Every active row of a project as columns: only what a search index needs, no records.

    A store may answer a full load this way (``changes_since(..., columns=True)``), so a fresh
    process builds its index without making one object per memory; the index then fetches
    whole records only for the rows a search returns.
    """

    ids: list[str]
    keys: list[int]  # capsule.search.index.stable_key of each id
    vectors: bytearray  # every row's embedding (little-endian float32), one after another
    vector_sizes: list[int]  # bytes of each row's embedding in ``vectors`` (0: none)
    models: list[str | None]
    terms: list[bytes]  # capsule.search.terms: int64 term hashes, one per token
    occurred: list[float]  # epoch seconds
    created: list[float]
    helpful: list[int]
    unhelpful: list[int]
    metas: list[dict[str, Any] | None]  # the session, author and outcome_status a memory's meta holds
    # A store may instead defer the vectors of a large project: ``vectors``, ``vector_sizes``,
    # ``keys``, ``occurred`` and ``created`` are then empty and each row comes as one packed row
    # (``capsule.search.index.pack_row``: key, times, vector size and the vector's sign bits), all a
    # first search needs; ``deferred`` reads the vectors themselves later.
    packed: bytearray = field(default_factory=bytearray)  # every row's packed row, one after another
    packed_lengths: list[int] = field(default_factory=list)
    deferred: DeferredVectors | None = None


class DeferredVectors(Protocol):
    """The vectors of a project whose index was loaded with sign bits only (see :class:`IndexColumns`).

    Each call answers from the store as it is now; a row's vector never changes while the row
    keeps its model, so the answer matches the codes loaded before. Rows gone meanwhile
    (purged) or now of another model are left out.
    """

    def some(self, ids: Sequence[str], model: str | None) -> dict[str, bytes]:
        """The vectors of the given memories that are of ``model``."""

    def chunks(self, model: str | None) -> Iterator[list[tuple[str, bytes]]]:
        """Every active memory's (id, vector) of ``model``, a few thousand at a time."""


@dataclass(slots=True)
class ChangeSet:
    """What changed in one project after a given version (see ``MemoryStore.changes_since``)."""

    version: int  # the project's version this change set brings the reader up to
    changed: list[MemoryRecord] = field(default_factory=list)  # active rows, with embeddings
    removed: list[str] = field(default_factory=list)  # ids no longer active (forgotten, evicted)
    reset: bool = False  # True: ``changed`` is every active row; drop anything held before
    columns: IndexColumns | None = None  # with reset: every active row as columns, ``changed`` empty
