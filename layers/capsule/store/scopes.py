"""The tenant's principal scopes: IAM principal ARN patterns -> the scope each grants.

Kept as one JSON list per tenant (``[{"principal": "arn:...:assumed-role/Ci/*", "scope": {...}}]``,
first match wins), beside the memories in the same database: the SQLite ``principal_scopes``
table (schema 9) or the MongoDB ``principal_scopes`` collection (schema 7). The rules are
validated at the edge (functions.scopes); here they are stored and read as given.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Protocol

from ..core.clock import to_epoch


class ScopeSettings(Protocol):
    def principal_rules(self, tenant: str) -> list[dict[str, Any]]:
        """The tenant's rules in their order (empty: every principal has the tenant's full access)."""

    def set_principal_rules(self, tenant: str, rules: list[dict[str, Any]], *, at: datetime) -> None:
        """Replace the tenant's rules (an empty list removes them)."""


class SQLiteScopeSettings:
    cache_s = 0.0  # a read of the local file costs microseconds: every request sees the latest

    def __init__(self, db: Any) -> None:
        self._db = db

    def principal_rules(self, tenant: str) -> list[dict[str, Any]]:
        rows = self._db._read("SELECT rules FROM principal_scopes WHERE tenant = ?", (tenant,))
        return json.loads(rows[0]["rules"]) if rows else []

    def set_principal_rules(self, tenant: str, rules: list[dict[str, Any]], *, at: datetime) -> None:
        with self._db._write() as conn:
            conn.execute(
                "INSERT INTO principal_scopes (tenant, rules, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (tenant) DO UPDATE SET rules = excluded.rules, updated_at = excluded.updated_at",
                (tenant, json.dumps(rules), to_epoch(at)),
            )


class MongoScopeSettings:
    cache_s = 10.0  # a round trip per request is worth saving; a change reaches every container within this

    def __init__(self, store: Any) -> None:
        from .mongo_visibility import PRINCIPAL_SCOPES

        self._rules = store.db[PRINCIPAL_SCOPES]

    def principal_rules(self, tenant: str) -> list[dict[str, Any]]:
        from .mongo_client import guarded

        with guarded("read the principal scopes"):
            doc = self._rules.find_one({"tenant": tenant}, projection={"rules": 1})
        return list(doc["rules"]) if doc else []

    def set_principal_rules(self, tenant: str, rules: list[dict[str, Any]], *, at: datetime) -> None:
        from .mongo_client import guarded

        with guarded("set the principal scopes"):
            self._rules.update_one(
                {"tenant": tenant}, {"$set": {"rules": rules, "updated_at": to_epoch(at)}}, upsert=True
            )


def scope_settings(memories: object) -> ScopeSettings:
    """The principal scopes of a memory store, in the same database."""
    from .sqlite import SQLiteStore

    memories = getattr(memories, "backing_store", memories)  # a sealed store (capsule.crypto): the one behind
    if isinstance(memories, SQLiteStore):
        return SQLiteScopeSettings(memories)
    if hasattr(getattr(memories, "db", None), "list_collection_names"):
        return MongoScopeSettings(memories)
    return NoScopeSettings()


class NoScopeSettings:
    """A store that keeps no principal scopes (a test double, a wrapper): every principal has
    the tenant's full access, and setting rules is refused."""

    cache_s = 0.0

    def principal_rules(self, tenant: str) -> list[dict[str, Any]]:
        return []

    def set_principal_rules(self, tenant: str, rules: list[dict[str, Any]], *, at: datetime) -> None:
        from ..core.errors import Unavailable

        raise Unavailable("this store keeps no principal scopes")
