"""How :class:`~capsule.store.mongo.MongoStore` writes to a project: one write, one version.

With transactions (replica set, Atlas) the version bump is the transaction's first write; without
(a standalone server, mongomock) a lease on the project document serialises writers, and writers
of one process queue on a lock first. Every write to memories goes through :meth:`_in_project`,
including the companion stores' (governance, transfer, tenants, sync).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from ..core import deadline as request_deadline
from ..core.errors import Unavailable
from .mongo_client import guarded

NEW_PROJECT = {
    "seq": 0,
    "version": 0,
    "purged_version": 0,
    "lock": None,
    "lock_until": 0.0,
    "memories": 0,
    "pinned": 0,
    "forgotten": 0,
}
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Write:
    """One write to a project: its transaction (or None), its version and its lease (or None)."""

    session: Any
    version: int
    token: str | None


# Writers in one process queue here before contending for the project's lease in the database.
_process_locks: dict[tuple[str, str, str], threading.Lock] = {}
_process_locks_guard = threading.Lock()


def _process_lock(db: str, tenant: str, project: str) -> threading.Lock:
    with _process_locks_guard:
        return _process_locks.setdefault((db, tenant, project), threading.Lock())


class ProjectWrites:
    """The write machinery the store's parts share; the attributes are set by ``MongoStore``."""

    db: Any
    client: Any
    memories: Any
    projects_: Any
    feedback: Any
    audit: Any
    cache: Any
    transactions: bool
    _lease_s: float
    _lock_wait_s: float
    _wall: Callable[[], datetime]
    _sleep: Callable[[float], None]

    def _in_project(
        self, tenant: str, project: str, what: str, body: Callable[[_Write], T], *, purged: bool = False
    ) -> T:
        """Run ``body`` as one write to the project, under the project's next version.

        With transactions the version bump is the transaction's first write (the conflict that
        serialises writers) and commits with the rows. Without, the lease serialises writers and
        the version is raised only after the rows carry it: a reader never sees a version
        whose rows it cannot read (``MemoryStore.changes_since``).
        """
        with guarded(what):
            if self.transactions:
                with self.client.start_session() as session:
                    return session.with_transaction(lambda s: self._versioned_txn(s, tenant, project, body, purged))
            with self._project_lease(tenant, project) as token:
                doc = self.projects_.find_one({"tenant": tenant, "name": project}, projection={"version": 1})
                version = int((doc or {}).get("version", 0)) + 1
                result = body(_Write(None, version, token))
                raised = {"version": version, **({"purged_version": version} if purged else {})}
                self.projects_.update_one({"tenant": tenant, "name": project, "lock": token}, {"$set": raised})
                return result

    def _versioned_txn(self, session: Any, tenant: str, project: str, body: Callable[[_Write], T], purged: bool) -> T:
        doc = self.projects_.find_one_and_update(
            {"tenant": tenant, "name": project},
            {"$inc": {"version": 1}},
            projection={"version": 1},
            return_document=True,
            session=session,
        )
        if purged:
            self.projects_.update_one(
                {"_id": doc["_id"]}, {"$set": {"purged_version": doc["version"]}}, session=session
            )
        return body(_Write(session, doc["version"], None))

    def _ensure_project(self, tenant: str, project: str, now: float) -> None:
        from pymongo.errors import DuplicateKeyError

        with guarded("record the project"):
            try:
                self.projects_.update_one(
                    {"tenant": tenant, "name": project},
                    {"$setOnInsert": {"retention_limit": None, "created_at": now, "updated_at": now, **NEW_PROJECT}},
                    upsert=True,
                )
            except DuplicateKeyError:
                pass  # a concurrent upsert created it first: just what we wanted

    @contextmanager
    def _project_lease(self, tenant: str, project: str) -> Iterator[str]:
        token = uuid.uuid4().hex
        with _process_lock(self.db.name, tenant, project):
            self._acquire(tenant, project, token)
            try:
                yield token
            except BaseException:
                self.memories.delete_many({"pending": token})  # nothing of a failed write stays
                raise
            finally:
                self.projects_.update_one(
                    {"tenant": tenant, "name": project, "lock": token}, {"$set": {"lock": None, "lock_until": 0.0}}
                )

    def _acquire(self, tenant: str, project: str, token: str) -> None:
        # The wait is bounded by what the request has left too (guarded gives the database calls theirs).
        deadline, delay = (
            time.monotonic() + request_deadline.budget(self._lock_wait_s, what="wait for the project"),
            0.005,
        )
        while True:
            wall = self._wall().timestamp()
            taken = self.projects_.find_one_and_update(
                {"tenant": tenant, "name": project, "$or": [{"lock": None}, {"lock_until": {"$lt": wall}}]},
                {"$set": {"lock": token, "lock_until": wall + self._lease_s}},
            )
            if taken is not None:
                return
            if time.monotonic() > deadline:
                raise Unavailable(f"project '{project}' is busy: another write held it for {self._lock_wait_s:g}s")
            self._sleep(delay)
            delay = min(delay * 2, 0.2)

    def _forgotten_fields(self, now: float, reason: str) -> dict[str, Any]:
        return {
            "active": False,
            "deleted_at": now,
            "deleted_reason": reason,
            "updated_at": now,
            "deleted_on": self._wall(),
        }

    def _audit(
        self, session: Any, tenant: str, memory_id: str, project: str, action: str, actor: str, reason: str, at: float
    ) -> None:
        self.audit.insert_one(
            {
                "tenant": tenant,
                "memory_id": memory_id,
                "project": project,
                "action": action,
                "actor": actor,
                "reason": reason,
                "at": at,
            },
            session=session,
        )
