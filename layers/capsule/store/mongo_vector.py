"""Candidates from Atlas Vector Search for projects too large to score whole.

Search normally scores every active memory of the project with numpy. Past
``Settings.mongodb_vector_search_min`` memories, the store instead asks ``$vectorSearch``
(tenant, project and the search filters as pre-filters, so the index never looks at
another tenant's vectors) for the nearest few hundred, adds the best keyword matches
(Atlas Search, :mod:`.atlas_search`) so a pure keyword hit is not lost, and the service re-ranks
that shortlist with the same numpy ranking. The index definition ships beside this module
(``atlas/vector_index.json``: scalar quantization, a quarter of the float vectors' search-node
RAM); :func:`vector_index_definition` sizes it for an embedder.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..core.clock import to_epoch
from ..core.records import Filters
from .mongo_docs import RECORD_PROJECTION, encode_vector

INDEX_FILE = Path(__file__).with_name("atlas") / "vector_index.json"
VECTOR_LIMIT = 200  # nearest memories taken from the index
# ANN breadth per result: Atlas's guidance is at least 20x the limit (recall of the HNSW walk,
# more so with quantized vectors), and it accepts at most 10,000.
NUM_CANDIDATES_FACTOR = 20
MAX_NUM_CANDIDATES = 10_000
QUANTIZATIONS = ("none", "scalar", "binary")
# The classic text indexes the keyword half used before Atlas Search (schema 3's, then the
# tenant-prefixed one): ``capsule cloud setup-atlas`` drops them, as every write paid for them.
OLD_TEXT_INDEXES = ("content_text", "tenant_text")


@lru_cache(maxsize=1)
def _index_file() -> dict[str, Any]:
    return json.loads(INDEX_FILE.read_text())


def vector_index_definition(
    dimensions: int, *, name: str | None = None, quantization: str | None = None
) -> dict[str, Any]:
    """The shipped Atlas Vector Search index, sized for ``dimensions``; ``quantization`` (none,
    scalar, binary) replaces the shipped ``scalar``. Atlas keeps the full-fidelity vectors on disk
    and re-scores a quantized search's candidates with them, so both cost little recall."""
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization must be one of {', '.join(QUANTIZATIONS)}, not {quantization!r}")
    index = copy.deepcopy(_index_file())
    for field in index["definition"]["fields"]:
        if field["type"] == "vector":
            field["numDimensions"] = dimensions
            if quantization is not None:
                field["quantization"] = quantization
    if name:
        index["name"] = name
    return index


def filter_paths() -> set[str]:
    """Fields the shipped index can pre-filter on."""
    return {f["path"] for f in _index_file()["definition"]["fields"] if f["type"] == "filter"}


def scope_filter(tenant: str, projects: Sequence[str] | None, filters: Filters) -> dict[str, Any]:
    """What both candidate sources match: the tenant's active memories, filtered.

    Only equality, ``$in``, ``$all`` and ranges, which ``$vectorSearch`` pre-filters accept.
    A path prefix is not among them: :func:`post_filter` applies it after the index.
    """
    query: dict[str, Any] = {"tenant": tenant, "active": True}
    if projects is not None:
        query["project"] = {"$in": list(projects)}
    if filters.component:
        query["meta.component"] = filters.component
    if filters.category:
        query["meta.category"] = filters.category
    if filters.tags:
        query["meta.tags"] = {"$all": list(filters.tags)}
    occurred: dict[str, float] = {}  # since/until: when it happened (stored time unless imported)
    if filters.since:
        occurred["$gte"] = to_epoch(filters.since)
    if filters.until:
        occurred["$lt"] = to_epoch(filters.until)
    if occurred:
        query["occurred_at"] = occurred
    return query


def post_filter(filters: Filters) -> dict[str, Any]:
    if not filters.path_prefix:
        return {}
    return {"path": {"$regex": "^" + re.escape(filters.path_prefix)}}


def _vector_prefilter(scope: dict[str, Any], model: str) -> dict[str, Any]:
    # $vectorSearch takes $in/$eq/ranges but not $all: several tags become an $and of equalities.
    clauses = []
    for key, value in {**scope, "model": model}.items():
        if isinstance(value, dict) and "$all" in value:
            clauses += [{key: tag} for tag in value["$all"]]
        else:
            clauses.append({key: value})
    return {"$and": clauses}


def vector_pipeline(
    *,
    tenant: str,
    projects: Sequence[str] | None,
    filters: Filters,
    query_vector: np.ndarray,
    model: str,
    index: str,
    limit: int = VECTOR_LIMIT,
) -> list[dict[str, Any]]:
    """The aggregation that returns the ``limit`` nearest active memories, as documents."""
    stages: list[dict[str, Any]] = [
        {
            "$vectorSearch": {
                "index": index,
                "path": "embedding",
                "queryVector": encode_vector(query_vector),
                "numCandidates": min(MAX_NUM_CANDIDATES, limit * NUM_CANDIDATES_FACTOR),
                "limit": limit,
                "filter": _vector_prefilter(scope_filter(tenant, projects, filters), model),
            }
        }
    ]
    if filters.path_prefix:
        stages.append({"$match": post_filter(filters)})
    stages.append({"$project": RECORD_PROJECTION})
    return stages
