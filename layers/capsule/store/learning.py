"""The learning store contract: solutions, patterns, their links, and job leases.

Separate from :class:`~capsule.store.base.MemoryStore` so each backend can keep it in its own
tables/collections of the same database. Every method is scoped by ``tenant`` (leases and job
state belong to the deployment); another tenant's id is simply :class:`NotFound`. Backend
errors become :class:`capsule.core.errors.Unavailable` at this boundary. One contract suite
(``tests/contract/test_learning_contract.py``) runs against every implementation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..core.learning_records import ApplicationRecord, LinkRecord, PatternRecord, SolutionRecord
from .base import Cursor


@runtime_checkable
class LearningStore(Protocol):
    def migrate(self) -> None:
        """Create or upgrade the schema; idempotent."""

    def tenants(self) -> list[str]:
        """Every tenant with a solution or a pattern, sorted (the backfill job visits each)."""

    # ---- solutions --------------------------------------------------------

    def insert_solution(self, record: SolutionRecord) -> None:
        """Store a new solution. Raises Conflict when the id exists."""

    def get_solution(self, tenant: str, solution_id: str) -> SolutionRecord:
        """One solution with its signature embeddings. Raises NotFound."""

    def find_solution(self, tenant: str, title: str, category: str) -> SolutionRecord | None:
        """The oldest solution with exactly this title and category, if any (import dedupes on it)."""

    def list_solutions(
        self, tenant: str, *, category: str | None, after: Cursor | None, limit: int
    ) -> list[SolutionRecord]:
        """Solutions newest first by (created_at, id), strictly after ``after``."""

    def solutions(
        self, tenant: str, *, category: str | None, limit: int, component: str | None = None
    ) -> list[SolutionRecord]:
        """Up to ``limit`` solutions (newest first) with embeddings: the search candidates. With
        ``component``, those whose body names that component or none (the Vector Bridge's rule)."""

    def replace_solution(self, record: SolutionRecord) -> None:
        """Replace title, category, body, embeddings and updated_at; counts and times are kept. Raises NotFound."""

    def set_solution_embeddings(self, tenant: str, solution_id: str, embeddings: np.ndarray, model: str) -> None:
        """Attach signature embeddings (computed later when the embedder was down)."""

    def delete_solution(self, tenant: str, solution_id: str) -> None:
        """Delete a solution, its applications and its pattern links. Raises NotFound."""

    def record_application(self, application: ApplicationRecord) -> SolutionRecord:
        """Count one success or failure on the solution and keep the event, atomically: either
        outcome sets ``last_applied_at``, a success also ``verified_on``, to the application's
        time (when the count is saturated too). Raises NotFound."""

    def applications(self, tenant: str, *, limit: int) -> list[ApplicationRecord]:
        """The tenant's most recent applications, newest first."""

    # ---- patterns ---------------------------------------------------------

    def upsert_pattern(self, record: PatternRecord) -> None:
        """Create or replace the pattern (tenant, tag, category); created_at of an existing one is kept."""

    def get_pattern(self, tenant: str, tag: str, category: str) -> PatternRecord:
        """One pattern. Raises NotFound."""

    def patterns(self, tenant: str, *, category: str | None, min_occurrences: int, limit: int) -> list[PatternRecord]:
        """Patterns, most occurrences first, then most recently seen."""

    def link(
        self,
        tenant: str,
        tag: str,
        category: str,
        kind: str,
        target_id: str,
        *,
        success: bool,
        at: datetime,
        evidence: str | None,
    ) -> tuple[LinkRecord, bool]:
        """Count one outcome of ``target`` for the pattern; returns the link and whether it counted.

        With ``evidence`` (a key naming what proves the outcome, e.g. ``memory:<id>``) the
        outcome counts at most once per link, however often or concurrently it is recorded:
        mining runs stay idempotent. Without it, every call counts.
        """

    def links(
        self,
        tenant: str,
        *,
        tag: str | None = None,
        category: str | None = None,
        kind: str | None = None,
        min_success: int = 0,
        limit: int = 100,
    ) -> list[LinkRecord]:
        """Links matching the filters, most successes first."""

    # ---- jobs -------------------------------------------------------------

    def acquire_lease(self, name: str, holder: str, *, now: datetime, until: datetime) -> bool:
        """Take (or extend) the lease ``name`` for ``holder`` unless another holder has an unexpired one."""

    def release_lease(self, name: str, holder: str) -> None:
        """Give the lease back if ``holder`` still holds it."""

    def job_state(self, name: str) -> dict[str, Any]:
        """What a job saved to resume from ({} at first)."""

    def save_job_state(self, name: str, state: dict[str, Any], *, at: datetime) -> None:
        """Save a job's resume point."""
