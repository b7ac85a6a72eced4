"""Where a search's candidates come from in MongoDB: the whole scope, or a bounded shortlist.

Below ``vector_search_min`` active memories a scope is read whole (into the warm index, or
for :func:`scope_records`). At or above it, nothing reads the scope whole: the cluster's
indexes give a shortlist (:func:`shortlist`), which the service re-ranks exactly as it ranks
a small project:

- by meaning: ``$vectorSearch`` (Atlas Vector Search) pre-filtered on tenant, project and the
  search's filters, the ``VECTOR_LIMIT`` nearest, in one round trip;
- by keyword: a ``$text`` query on the text index whose prefix is the tenant (every query's
  equality) and whose suffix keys are project and ``active`` (filtered inside the index, so a
  global search's ``$in`` of projects needs no second index), the ``KEYWORD_LIMIT`` best.

Keyword-only searches, a search while the embedder is down and a global search take the
same path without its vector half: a large scope is never loaded because a vector is missing.
The size test reads the projects' maintained counters (``memories`` on each project document),
not the memories.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..records import Filters, MemoryRecord
from . import mongo_vector as vs
from .mongo_client import guarded
from .mongo_docs import RECORD_PROJECTION, doc_to_record


def scope_records(memories: Any, tenant: str, projects: Sequence[str] | None, filters: Filters) -> list[MemoryRecord]:
    """Every active memory of the scope that passes the filters (a small scope only)."""
    query = {**vs.scope_filter(tenant, projects, filters), **vs.post_filter(filters)}
    with guarded("read the candidates"):
        docs = list(memories.find(query, projection=RECORD_PROJECTION))
    return [doc_to_record(doc) for doc in docs]


def scope_size(projects_coll: Any, memories: Any, tenant: str, projects: Sequence[str] | None,
               at_least: int) -> int:
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


def shortlist(
    memories: Any, tenant: str, projects: Sequence[str] | None, filters: Filters, *, query: str,
    query_vector: np.ndarray | None, model: str, index: str,
) -> list[MemoryRecord]:
    """The nearest memories by vector (when there is a query vector) and the best by keyword."""
    docs: dict[str, dict[str, Any]] = {}
    with guarded("search the vector index"):
        if query_vector is not None:
            pipeline = vs.vector_pipeline(tenant=tenant, projects=projects, filters=filters,
                                          query_vector=query_vector, model=model, index=index)
            # One batch: the default first batch (101 documents) would cost a second round trip.
            for doc in memories.aggregate(pipeline, batchSize=vs.VECTOR_LIMIT):
                docs[doc["id"]] = doc
        if vs.keyword_terms(query):
            keyword = memories.find(vs.keyword_query(tenant, projects, filters, query),
                                    projection={**RECORD_PROJECTION, "score": {"$meta": "textScore"}},
                                    sort=[("score", {"$meta": "textScore"})], limit=vs.KEYWORD_LIMIT)
            for doc in keyword:
                doc.pop("score", None)
                docs.setdefault(doc["id"], doc)
    return [doc_to_record(doc) for doc in docs.values()]
