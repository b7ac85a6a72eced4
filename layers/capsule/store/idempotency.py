"""Idempotency keys: the first answer to a write sent with an ``Idempotency-Key``, kept per
tenant for a bounded time, so a retried request gets that answer instead of doing the work
twice (the edge, functions.idempotency, decides which routes and what is kept).

A key is claimed before the work (:meth:`IdempotencyStore.claim`: atomic, one winner), then
completed with the answer or released when the work failed (nothing was done, so a retry may
do it). A claim left by a process that died is taken over once ``lease_s`` has passed; a
completed key is forgotten after its ``ttl_s``. Backends: SQLite (sqlite_idempotency) and
MongoDB (mongo_idempotency), in the memory store's own database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

IN_PROGRESS: Literal["in_progress"] = "in_progress"
COMPLETED: Literal["completed"] = "completed"


@dataclass(frozen=True, slots=True)
class IdempotencyRecord:
    tenant: str
    key: str
    fingerprint: str  # the request's hash: route, path, query and body
    status: str  # IN_PROGRESS or COMPLETED
    expires_at: float  # epoch seconds: the lease of a claim, the retention of an answer
    response: dict[str, Any] | None = None  # the answer, once COMPLETED


class IdempotencyStore(Protocol):
    def migrate(self) -> None: ...

    def claim(self, tenant: str, key: str, fingerprint: str, *, now: float, lease_s: float) -> IdempotencyRecord | None:
        """Claim ``key`` for this request: None when it is ours now (absent or expired before),
        else the record that holds it (in progress or completed, maybe for another body)."""
        ...

    def complete(
        self, tenant: str, key: str, fingerprint: str, response: dict[str, Any], *, now: float, ttl_s: float
    ) -> None:
        """Keep ``response`` as the answer to ``key`` until ``now + ttl_s``."""
        ...

    def release(self, tenant: str, key: str, fingerprint: str) -> None:
        """Give up a claim (the work failed and changed nothing): the next request with the key runs."""
        ...

    def purge(self, now: float) -> int:
        """Forget every expired key; how many were."""
        ...
