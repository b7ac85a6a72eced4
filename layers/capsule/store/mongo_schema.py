"""Indexes created once per schema version, not on every cold start.

A store's ``migrate`` runs when a process (a Lambda container) starts; creating each index
again is a round trip per index to the cluster, on every cold start. Instead the database
keeps one document per store in its ``meta`` collection, ``{"_id": key, "version": n}``, and
the indexes are created only when that version is older than the code's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

META = "meta"


def ensure_version(db: Any, key: str, version: int, create: Callable[[], None]) -> bool:
    """Run ``create`` (idempotent: it creates indexes) when the recorded version of ``key`` is
    below ``version``, then record ``version``; True when it ran."""
    current = db[META].find_one({"_id": key}, projection={"version": 1}) or {}
    if int(current.get("version", 0)) >= version:
        return False
    create()
    db[META].update_one({"_id": key}, {"$max": {"version": version}}, upsert=True)
    return True
