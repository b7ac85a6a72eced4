"""Tenants' wrapped data keys and projects' ``encryption`` setting in MongoDB
(capsule.crypto.keys.KeyStore): collections ``data_keys`` and ``project_encryption``, indexed
from schema version 8 (capsule.store.mongo_indexes)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core.clock import from_epoch, to_epoch
from ..core.errors import Conflict
from ..crypto.keys import DataKeyRow
from .mongo_client import guarded


class MongoKeyStore:
    def __init__(self, db: Any) -> None:
        self.keys = db["data_keys"]
        self.modes = db["project_encryption"]
        self.memories = db["memories"]

    def data_keys(self, tenant: str) -> list[DataKeyRow]:
        with guarded("read the data keys"):
            docs = list(self.keys.find({"tenant": tenant}).sort("version", 1))
        return [
            DataKeyRow(
                d["tenant"], d["kid"], d["version"], bytes(d["wrapped"]), d["wrapped_by"], from_epoch(d["created_at"])
            )
            for d in docs
        ]

    def add_data_key(self, row: DataKeyRow) -> bool:
        doc = {
            "_id": f"{row.tenant}\x00{row.version}",
            "tenant": row.tenant,
            "version": row.version,
            "kid": row.kid,
            "wrapped": row.wrapped,
            "wrapped_by": row.wrapped_by,
            "created_at": to_epoch(row.created_at),
        }
        try:
            with guarded("keep a data key"):
                self.keys.insert_one(doc)
        except Conflict:  # the version is taken: another process made it first
            return False
        return True

    def rewrap_data_key(self, tenant: str, version: int, wrapped: bytes, wrapped_by: str, *, was: str) -> bool:
        with guarded("re-wrap a data key"):
            done = self.keys.update_one(
                {"tenant": tenant, "version": version, "wrapped_by": was},
                {"$set": {"wrapped": wrapped, "wrapped_by": wrapped_by}},
            )
        return bool(done.modified_count)

    def encryption_mode(self, tenant: str, project: str) -> str | None:
        with guarded("read the encryption setting"):
            doc = self.modes.find_one({"_id": f"{tenant}\x00{project}"})
        return None if doc is None else doc["mode"]

    def set_encryption_mode(self, tenant: str, project: str, mode: str, *, at: datetime) -> None:
        with guarded("set the encryption setting"):
            self.modes.update_one(
                {"_id": f"{tenant}\x00{project}"},
                {"$set": {"tenant": tenant, "project": project, "mode": mode, "updated_at": to_epoch(at)}},
                upsert=True,
            )

    # ---- re-sealing (capsule.sealing.reseal) ------------------------------------------

    def stale_ids(self, tenant: str, current: str, *, all_projects: list[str], limit: int) -> list[str]:
        import re

        query = {
            "tenant": tenant,
            "$or": [
                {"content": {"$regex": "^cme1\\.", "$not": re.compile("^cme1\\." + re.escape(current) + "\\.")}},
                {"project": {"$in": all_projects}, "content": {"$not": re.compile("^cme1\\.")}},
            ],
        }
        with guarded("find memories to re-seal"):
            docs = list(self.memories.find(query, projection={"id": 1}).sort("seq", 1).limit(limit))
        return [d["id"] for d in docs]

    def all_projects(self, tenant: str) -> list[str]:
        with guarded("read the encryption settings"):
            return [d["project"] for d in self.modes.find({"tenant": tenant, "mode": "all"})]

    def rewrite_sealed(self, record: Any, was: str) -> bool:
        with guarded("re-seal a memory"):
            done = self.memories.update_one(
                {"tenant": record.tenant, "id": record.id, "content": was},
                {"$set": {"content": record.content, "meta": record.meta, "explanation": record.explanation}},
            )
        return bool(done.modified_count)
