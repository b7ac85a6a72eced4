"""The visibility part of the MongoDB schema: the list filter for visibility and subject, and
the tenant's principal scopes (their indexes are in :mod:`.mongo_indexes`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PRINCIPAL_SCOPES = "principal_scopes"


def visibility_query(query: dict[str, Any], visibility: Sequence[str], subjects: Sequence[str]) -> dict[str, Any]:
    """``query`` narrowed to memories of these visibilities and subjects (empty: any). A document
    stored before visibility existed has none, and is private."""
    if visibility:
        query["visibility"] = {"$in": [*visibility, *([None] if "private" in visibility else [])]}
    if subjects:
        query["subject"] = {"$in": list(subjects)}
    return query
