"""The store contract: what every backend (SQLite, MongoDB) must do.

Every method is scoped by ``tenant``: a store never returns, changes or reveals a
memory of another tenant, and a wrong tenant's id is simply :class:`NotFound`.
Backend errors become :class:`capsule.core.errors.Unavailable` at this boundary.
One contract suite (``tests/contract``) runs against every implementation.

Change tracking (for the warm search index, :mod:`capsule.search.index`): every project has a
*version*, an integer that starts at 0 and grows by at least 1 in every write that changes
any of the project's memories. The write stamps each memory it changes with the new version
(the memory's own ``version``). "Changes a memory" means every one of: insert, eviction,
forget, restore, pin/unpin, feedback (helpful/unhelpful counters), ``set_embedding``, purge,
and any future method that alters a memory row. A reader that saw version ``v`` can then
ask for the rows stamped after ``v`` (:meth:`MemoryStore.changes_since`) instead of
reloading the project, and can tell from :meth:`MemoryStore.change_markers` alone whether
anything changed (the query cache keys on it, which keeps it right across processes).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np

from ..core.records import AuditRecord, ChangeSet, Filters, MemoryRecord, ProjectStats, WriteOutcome

Cursor = tuple[float, str]  # (created_at epoch seconds, id) of the last item seen
AuditCursor = tuple[float, str]  # (at epoch seconds, the store's key of the row) of an audit record


@runtime_checkable
class MemoryStore(Protocol):
    def migrate(self) -> None:
        """Create or upgrade the schema; idempotent."""

    def close(self) -> None:
        """Release connections."""

    def insert(
        self,
        records: Sequence[MemoryRecord],
        *,
        limit: int,
        dedupe_after: datetime | None,
        actor: str,
    ) -> WriteOutcome:
        """Insert ``records`` (all in one project) atomically: all or none.

        A record whose sha256 matches an active memory of the same tenant and project
        created at or after ``dedupe_after`` is not inserted; ``duplicates`` maps its
        id to the existing one. Then, in the same transaction, while the project holds
        more than ``limit`` active memories, the oldest unpinned one not written by this
        call is evicted (forgotten with reason ``evicted``, audited as ``actor``).
        Concurrent inserts never evict more than needed and never evict a pinned memory.
        """

    def insert_bulk(
        self,
        records: Sequence[MemoryRecord],
        *,
        limit: int,
        dedupe_after: datetime | None,
        actor: str,
    ) -> WriteOutcome:
        """:meth:`insert` for a large batch (thousands of records of one project: an import,
        ``capsule bench``, a folder ingested): the same rows, dedupe, eviction and atomicity,
        with the per-batch work (counts, eviction, the store's caches) done once per call."""

    def enforce_limit(self, tenant: str, project: str, *, limit: int, at: datetime, actor: str) -> list[str]:
        """Evict, in one atomic write, the oldest unpinned memories beyond ``limit`` (for a
        limit lowered since they were stored); returns their ids. The same rule and audit
        as eviction in :meth:`insert`, so a concurrent insert never makes it evict too many."""

    def get(self, tenant: str, memory_id: str, *, include_forgotten: bool = False) -> MemoryRecord:
        """One memory, with its embedding. Raises NotFound."""

    def get_many(self, tenant: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """The memories with these ids, forgotten ones included, in any order; unknown ids are
        left out. The embedding may be omitted (a search index fetches the records of its hits)."""

    def list(
        self,
        tenant: str,
        project: str,
        *,
        pinned_only: bool,
        after: Cursor | None,
        limit: int,
        retention: str | None = None,
        forgotten: bool = False,
    ) -> list[MemoryRecord]:
        """Active memories (or, with ``forgotten``, the forgotten ones still restorable), newest
        first by (created_at, id), strictly after ``after``."""

    def previous_in_session(self, tenant: str, project: str, session: str | int, *, before: datetime) -> str | None:
        """The content of the active memory whose ``meta.session`` is ``session`` that happened
        last strictly before ``before`` (by ``occurred_at``; ties to the one stored last), or None."""

    def set_pinned(self, tenant: str, memory_id: str, pinned: bool, *, at: datetime, actor: str) -> MemoryRecord:
        """Pin or unpin an active memory. Raises NotFound."""

    def forget(self, tenant: str, memory_id: str, *, at: datetime, actor: str, reason: str) -> MemoryRecord:
        """Mark an active memory forgotten (recoverable). Raises NotFound."""

    def restore(self, tenant: str, memory_id: str, *, at: datetime, actor: str) -> MemoryRecord:
        """Bring back a forgotten memory. Raises NotFound, or Conflict when it is there but not forgotten."""

    def add_feedback(
        self, tenant: str, memory_id: str, *, helpful: bool, context: str | None, at: datetime
    ) -> MemoryRecord:
        """Count one vote on an active memory and keep the vote. Raises NotFound."""

    def candidates(self, tenant: str, projects: Sequence[str] | None, filters: Filters) -> builtins.list[MemoryRecord]:
        """Active memories of the given projects (None: all of the tenant's), filtered."""

    def tenants(self) -> builtins.list[str]:
        """Every tenant that has a project, sorted (the scheduled jobs visit each)."""

    def change_markers(self, tenant: str, projects: Sequence[str] | None) -> dict[str, int]:
        """The current version of each named project (None: every project of the tenant).

        Projects that do not exist are left out. Cheap: one small query, no memory rows read.
        Must never return a version whose changes :meth:`changes_since` cannot yet see
        (read the version after, or in the same snapshot as, the rows it covers).
        """

    def changes_since(self, tenant: str, project: str, since: int, *, columns: bool = False) -> ChangeSet:
        """What changed in ``project`` after version ``since``, read from one consistent state.

        Returns ``ChangeSet(version, changed, removed, reset)``:

        * ``version``: the project's version the answer is complete up to (0 if no project);
        * ``changed``: every memory stamped after ``since`` that is active now (not
          forgotten/evicted), with its embedding, in insertion order;
        * ``removed``: ids of memories stamped after ``since`` that are no longer active
          (forgotten or evicted: tombstones);
        * ``reset``: True when the reader must drop what it holds and take ``changed`` as
          the whole project: when ``since`` is 0, when ``since`` is newer than the project
          (the store was replaced), or when rows were purged (deleted for good, leaving no
          tombstone) after ``since``. ``purge_forgotten`` therefore bumps the version of every
          project it deletes from and remembers that version as the project's purge version.

        Writes must be atomic with their version stamp: a reader must never see version ``v``
        without every row stamped ``<= v`` (SQLite: one ``BEGIN IMMEDIATE`` transaction for the
        bump and the row changes, a read transaction for the answer; MongoDB: bump the project's
        counter with ``$inc`` and stamp the rows in the same transaction, or otherwise make a
        stamp visible no later than the counter).

        ``columns=True``: a reset may instead come as ``ChangeSet.columns`` (every active row as
        :class:`~capsule.core.records.IndexColumns`, ``changed`` empty), which a search index loads
        without building a record per memory. A store may ignore it and return records.
        """

    def ids_with_prefix(self, tenant: str, prefix: str, *, limit: int) -> builtins.list[str]:
        """Up to ``limit`` ids of the tenant's memories (forgotten ones too) that start with
        ``prefix`` (case-sensitive), sorted; for resolving the short ids people type."""

    def projects(self, tenant: str, *, only: str | None = None) -> builtins.list[ProjectStats]:
        """Per project of the tenant: counts, limit and last activity, read from counts the
        writes keep (no read of the memories); ``only``: that project's alone (or none)."""

    def set_retention_limit(self, tenant: str, project: str, limit: int, *, at: datetime) -> None:
        """Set a project's own rolling limit."""

    def set_retention_limit_if_unset(self, tenant: str, project: str, limit: int, *, at: datetime) -> int | None:
        """Set the limit only where the project has none of its own; returns the one it keeps
        (None: the deployment's default applied and ``limit`` is now set)."""

    def retention_limit(self, tenant: str, project: str) -> int | None:
        """The project's own limit, or None to use the deployment's."""

    def set_guard_policies(self, tenant: str, project: str, values: dict[str, str], *, at: datetime) -> None:
        """Set the project's own ``secrets_policy`` and/or ``pii_policy`` (the keys given; the
        other keeps its value)."""

    def guard_policies(self, tenant: str, project: str) -> dict[str, str | None]:
        """``{"secrets_policy": ..., "pii_policy": ...}``, None where the project has not set one."""

    def audit_log(self, tenant: str, *, memory_id: str | None = None, limit: int = 100) -> builtins.list[AuditRecord]:
        """Audit records, newest first."""

    def audit_page(
        self,
        tenant: str,
        *,
        project: str | None = None,
        memory_id: str | None = None,
        action: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        before: AuditCursor | None = None,
        limit: int = 100,
    ) -> builtins.list[tuple[AuditCursor, AuditRecord]]:
        """The tenant's audit records matching every filter given (``since`` inclusive, ``until``
        exclusive, on ``at``), newest first by (at, key), strictly before ``before``; at most
        ``limit``, each with its position (the ``before`` of the next page). ``key`` is the
        store's own key of the row, as text: a position another store made, or one made up, is
        simply a place in the order (never refused: the cursor's schema admits it). Every combination of filters reads one index
        range (the tenant's, a project's, a memory's or an action's records in (at, key) order)."""

    def purge_forgotten(self, *, before: datetime, at: datetime | None = None) -> int:
        """Delete for good the memories forgotten before ``before``, each audited as purged
        at ``at`` (default ``before``); returns how many."""

    def pending_embeddings(self, *, limit: int, model: str | None = None) -> builtins.list[MemoryRecord]:
        """Active memories stored while no embedding could be made, oldest first; with
        ``model``, also those embedded by any other model (the deployment switched models)."""

    def set_embedding(self, tenant: str, memory_id: str, embedding: np.ndarray, model: str) -> None:
        """Attach an embedding and mark the memory ready."""

    def cache_get(self, model: str, sha256s: Sequence[str], *, fresh_after: datetime) -> dict[str, np.ndarray]:
        """Cached embeddings by text sha256 for ``model`` written after ``fresh_after``."""

    def cache_put(self, model: str, vectors: dict[str, np.ndarray], *, at: datetime) -> None:
        """Remember embeddings by text sha256."""

    def cache_purge(self, *, before: datetime) -> int:
        """Drop cache entries written before ``before``."""


@runtime_checkable
class NearestCandidates(Protocol):
    """Optional: a store with a vector index shortlists candidates for very large scopes."""

    def nearest_candidates(
        self,
        tenant: str,
        projects: Sequence[str] | None,
        filters: Filters,
        *,
        query: str,
        query_vector: np.ndarray | None,
        model: str,
    ) -> list[MemoryRecord] | None:
        """Active memories likely to rank best for the query (nearest by vector when
        ``query_vector`` is given, best by keyword), filtered like :meth:`MemoryStore.candidates`;
        None when the scope is small enough to score whole (the caller then reads it whole).
        Never reads a large scope whole, with or without a query vector."""
