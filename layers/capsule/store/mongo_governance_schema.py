"""The governance part of the MongoDB schema: the queries :mod:`.mongo` itself issues for
retention classes and versions (the indexes serving them are in :mod:`.mongo_indexes`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.retention import AUTO_LIKE

VERSIONS = "memory_versions"


def class_query(query: dict[str, Any], retention: str) -> dict[str, Any]:
    """``query`` narrowed to memories of an effective class, as one ``$or`` of index ranges
    (crossed with any ``$or`` the query has: each branch stays one index's range)."""
    branches: list[dict[str, Any]] = [{"retention": retention}]
    if retention in ("irreplaceable", "replaceable"):
        branches.append({"retention": {"$in": list(AUTO_LIKE)}, "pinned": retention == "irreplaceable"})
    outer = query.pop("$or", [{}])
    query["$or"] = [{**a, **b} for a in outer for b in branches]
    return query


def drop_versions(db: Any, session: Any, tenant: str, memory_ids: Sequence[str]) -> None:
    """Delete the earlier versions of memories purged for good."""
    db[VERSIONS].delete_many({"tenant": tenant, "memory_id": {"$in": list(memory_ids)}}, session=session)
