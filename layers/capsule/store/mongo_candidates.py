"""Where a search's candidates come from in MongoDB: the whole scope, or a bounded shortlist.

Below ``vector_search_min`` active memories a scope is read whole (into the warm index, or
for :func:`scope_records`). At or above it, nothing reads the scope whole: the cluster's
indexes give a shortlist (:func:`shortlist`), which the service re-ranks exactly as it ranks
a small project:

- by meaning: ``$vectorSearch`` (Atlas Vector Search) pre-filtered on tenant, project and the
  search's filters, the ``VECTOR_LIMIT`` nearest, in one round trip;
- by keyword: ``$search`` (Atlas Search, :mod:`.atlas_search`), tenant, project, ``active`` and
  the filters inside the index, the ``KEYWORD_LIMIT`` best by Lucene's BM25 over the index, and in
  the same round trip the scope's size and each query term's count in it, so the service ranks
  the shortlist by the terms' rarity in the scope, as the embedded store does (``keyword_stats``).

The two halves are asked one after the other, each under its own bound (``STAGE_MS``, and what
the request has left): a half that fails or is too slow leaves the other's candidates, and the
:class:`Shortlist` says which half is missing (the answer's explanation repeats it). Only when
every half asked fails is the search unavailable.

Keyword-only searches, a search while the embedder is down and a global search take the
same path without its vector half: a large scope is never loaded because a vector is missing.
The size test reads the projects' maintained counters (``memories`` on each project document),
not the memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.errors import Unavailable
from ..core.records import Filters, KeywordStats, MemoryRecord
from . import atlas_search
from . import mongo_vector as vs
from .mongo_client import guarded
from .mongo_docs import RECORD_PROJECTION, doc_to_record


def scope_records(memories: Any, tenant: str, projects: Sequence[str] | None, filters: Filters) -> list[MemoryRecord]:
    """Every active memory of the scope that passes the filters (a small scope only)."""
    query = {**vs.scope_filter(tenant, projects, filters), **vs.post_filter(filters)}
    with guarded("read the candidates"):
        docs = list(memories.find(query, projection=RECORD_PROJECTION))
    return [doc_to_record(doc) for doc in docs]


def scope_size(projects_coll: Any, memories: Any, tenant: str, projects: Sequence[str] | None, at_least: int) -> int:
    """Active memories in the scope: the sum of the projects' counters (one small read).

    A project written before the counters existed has none: it is counted in the memories,
    with a limit, so that count stops at ``at_least``.
    """
    query: dict[str, Any] = {"tenant": tenant}
    if projects is not None:
        query["name"] = {"$in": list(projects)}
    with guarded("read the project sizes"):
        docs = list(projects_coll.find(query, projection={"name": 1, "memories": 1}))
        total, uncounted = 0, []
        for doc in docs:
            if isinstance(doc.get("memories"), int):
                total += doc["memories"]
            else:
                uncounted.append(doc["name"])
        if uncounted and total < at_least:
            scope = vs.scope_filter(tenant, uncounted, Filters())
            total += memories.count_documents(scope, limit=at_least - total)
    return total


STAGE_MS = 3_000  # each half's own server-side bound: a slow half is cut off, the other answers


class Shortlist(list):
    """The shortlisted memories; ``degraded`` says which half did not answer ('' when none);
    ``keyword_stats``: BM25's statistics over the scope, counted by the Atlas Search index (None:
    the shortlist's own)."""

    degraded: str = ""
    keyword_stats: KeywordStats | None = None


def shortlist(
    memories: Any,
    tenant: str,
    projects: Sequence[str] | None,
    filters: Filters,
    *,
    query: str,
    query_vector: np.ndarray | None,
    model: str,
    index: str,
    search_index: str = atlas_search.SEARCH_INDEX,
) -> Shortlist:
    """The nearest memories by vector (when there is a query vector) and the best by keyword."""
    docs: dict[str, dict[str, Any]] = {}
    asked, stats = 0, None
    failed: list[tuple[str, str]] = []
    if query_vector is not None:
        asked += 1
        pipeline = vs.vector_pipeline(
            tenant=tenant, projects=projects, filters=filters, query_vector=query_vector, model=model, index=index
        )
        # One batch: the default first batch (101 documents) would cost a second round trip.
        found = _half(memories, pipeline, vs.VECTOR_LIMIT, "search the vector index", failed, "by meaning")
        for doc in found:
            docs[doc["id"]] = doc
    if query.strip():
        asked += 1
        pipeline = atlas_search.keyword_pipeline(
            tenant=tenant, projects=projects, filters=filters, query=query, index=search_index
        )
        # One batch: the matches and the counts after them.
        found, stats = atlas_search.split_counts(
            _half(
                memories,
                pipeline,
                len(pipeline) + atlas_search.KEYWORD_LIMIT,
                "search the keyword index",
                failed,
                "by keyword",
            )
        )
        for doc in found:
            doc.pop("score", None)
            docs.setdefault(doc["id"], doc)
    if asked and len(failed) == asked:
        raise Unavailable("; ".join(reason for _, reason in failed))
    out = Shortlist(doc_to_record(doc) for doc in docs.values())
    out.keyword_stats = stats
    if failed:
        ((half, reason),) = failed
        out.degraded = f"the candidates {half} are missing ({reason})"
    return out


def _half(
    memories: Any, pipeline: list[dict[str, Any]], batch: int, what: str, failed: list[tuple[str, str]], half: str
) -> list[dict[str, Any]]:
    """One half's documents, or none (its failure noted in ``failed``)."""
    try:
        with guarded(what):
            return list(memories.aggregate(pipeline, batchSize=batch, maxTimeMS=STAGE_MS))
    except Unavailable as exc:
        failed.append((half, exc.message))
        return []
