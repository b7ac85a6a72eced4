"""What the redact job (:mod:`capsule.jobs.guard_sweep`) needs of a store beyond the transfer and sync
contracts: the kept versions of a page of memories in one read, and versions rewritten in place
(their texts only: the number, times, actor stay). Rows are as stored (a sealed store's sealed)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .governance import VersionRecord


@runtime_checkable
class RedactionStore(Protocol):
    def versions_of(self, tenant: str, memory_ids: Sequence[str]) -> list[VersionRecord]:
        """Every kept version of these memories."""

    def rewrite_versions(self, tenant: str, rows: Sequence[VersionRecord]) -> int:
        """Write the content, sha256, explanation, meta and reason of these versions over the kept
        ones of the same (memory, number); returns how many were found."""


class SQLiteRedaction:
    def __init__(self, db: Any) -> None:
        self._db = db

    def versions_of(self, tenant: str, memory_ids: Sequence[str]) -> list[VersionRecord]:
        from .sqlite_governance import _VERSION_COLUMNS, _row_to_version

        found: list[VersionRecord] = []
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self._db._read(
                f"SELECT {_VERSION_COLUMNS} FROM memory_versions WHERE tenant = ? AND memory_id IN "
                f"({', '.join('?' * len(part))}) ORDER BY memory_id, number",
                (tenant, *part),
            )
            found += [_row_to_version(row) for row in rows]
        return found

    def rewrite_versions(self, tenant: str, rows: Sequence[VersionRecord]) -> int:
        with self._db._write() as conn:
            before = conn.total_changes
            conn.executemany(
                "UPDATE memory_versions SET content = ?, sha256 = ?, explanation = ?, meta = ?, reason = ? "
                "WHERE tenant = ? AND memory_id = ? AND number = ?",
                [
                    (v.content, v.sha256, v.explanation, json.dumps(v.meta), v.reason, tenant, v.memory_id, v.number)
                    for v in rows
                ],
            )
            return conn.total_changes - before


class MongoRedaction:
    def __init__(self, store: Any) -> None:
        from .mongo_governance_schema import VERSIONS

        self._versions = store.db[VERSIONS]

    def versions_of(self, tenant: str, memory_ids: Sequence[str]) -> list[VersionRecord]:
        from .mongo_client import guarded
        from .mongo_governance import _doc_version

        with guarded("read the memories' versions"):  # the version_number index: (tenant, memory_id, number)
            docs = list(self._versions.find({"tenant": tenant, "memory_id": {"$in": list(dict.fromkeys(memory_ids))}}))
        return [_doc_version(d) for d in docs]

    def rewrite_versions(self, tenant: str, rows: Sequence[VersionRecord]) -> int:
        from .mongo_client import guarded

        found = 0
        with guarded("rewrite the versions"):
            for v in rows:
                found += self._versions.update_one(
                    {"tenant": tenant, "memory_id": v.memory_id, "number": v.number},
                    {
                        "$set": {
                            "content": v.content,
                            "sha256": v.sha256,
                            "explanation": v.explanation,
                            "meta": dict(v.meta),
                            "reason": v.reason,
                        }
                    },
                ).matched_count
        return found


def redaction_store(memories: object) -> RedactionStore:
    memories = getattr(memories, "backing_store", memories)  # a sealed store: the sealed rows as stored
    from .sqlite import SQLiteStore

    if isinstance(memories, SQLiteStore):
        return SQLiteRedaction(memories)
    return MongoRedaction(memories)
