"""Asynchronous jobs: a request whose work outlives the API's synchronous budget (a long ingest,
an import, mining), accepted with 202 and run by a worker; its caller polls for the answer.

A job is created ``queued`` with the request it stands for (the edge decides what that holds:
functions.async_jobs keeps the event without credentials), then claimed by one worker
(:meth:`JobStore.claim`: atomic, one winner) and made ``running`` under a lease; a claim left
by a worker that died is taken over once its lease has passed. It finishes ``succeeded`` or
``failed`` with the answer the synchronous route would have given (status, headers, body). A
job is forgotten ``ttl_s`` after it was created (MongoDB's TTL index; :meth:`JobStore.purge`
on SQLite). Backends: SQLite (sqlite_async_jobs) and MongoDB (mongo_async_jobs), in the memory
store's own database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

QUEUED: Literal["queued"] = "queued"
RUNNING: Literal["running"] = "running"
SUCCEEDED: Literal["succeeded"] = "succeeded"
FAILED: Literal["failed"] = "failed"
STATUSES = (QUEUED, RUNNING, SUCCEEDED, FAILED)
DONE = (SUCCEEDED, FAILED)


@dataclass(frozen=True, slots=True)
class Job:
    id: str  # opaque and unguessable (the edge makes it)
    tenant: str
    principal: str  # who submitted it: only they (or the tenant's unrestricted callers) read it
    operation: str  # the route's name: ingest | import_data | detect_patterns
    request: dict[str, Any]  # what the worker replays (JSON)
    status: str  # one of STATUSES
    created_at: float  # epoch seconds
    expires_at: float  # forgotten after this
    started_at: float | None = None
    finished_at: float | None = None
    lease_until: float | None = None  # while running: another worker may take it over after this
    attempts: int = 0  # claims so far
    response: dict[str, Any] | None = None  # once done: {"statusCode", "headers", "body"}


class JobStore(Protocol):
    def migrate(self) -> None: ...

    def create(self, job: Job) -> None:
        """Keep a new ``queued`` job (its id is new)."""
        ...

    def get(self, tenant: str, job_id: str, *, now: float) -> Job | None:
        """The tenant's job, or None (absent, another tenant's, or expired)."""
        ...

    def claim(self, tenant: str, job_id: str, *, now: float, lease_s: float) -> Job | None:
        """Make the job ``running`` for this worker until ``now + lease_s`` and count the attempt:
        the job as claimed when it was ``queued``, or ``running`` with its lease passed; None when
        another worker holds it, it is done, or there is no such job. One caller wins."""
        ...

    def finish(self, tenant: str, job_id: str, *, status: str, response: dict[str, Any], now: float) -> bool:
        """Record a job's end (``succeeded`` or ``failed``) with its answer, unless it is already
        done; whether it was recorded."""
        ...

    def pending(self, *, now: float, limit: int) -> list[tuple[str, str]]:
        """(tenant, id) of jobs a worker should take up: ``queued``, or ``running`` past their lease."""
        ...

    def purge(self, now: float) -> int:
        """Forget every expired job; how many were."""
        ...
