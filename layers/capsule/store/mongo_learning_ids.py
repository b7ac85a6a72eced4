"""Learning schema 2 on MongoDB: solutions and applications keyed by (tenant, id), as memories are.

Before it a solution's (and an application's) ``_id`` was its bare id, unique across the
database, so a create or an import of an id another tenant held failed on the key, and that
failure told the caller the id exists elsewhere (issue 31). Now the id is the ``id`` field,
unique per tenant by a compound index, and every query names both; ``_id`` is opaque (an
ObjectId for new documents).

An existing document keeps its ``_id`` (rewriting a primary key is an insert and a delete per
document, and a crash between the two would leave two): it gets ``id`` copied from it, in
place, by one pipeline update on the server, which a re-run after a crash simply finishes (it
reads only documents still without ``id``). Its old ``_id`` can never meet a new document's,
an ObjectId. The unique index is made only after, as documents without ``id`` would all hold
the same (tenant, null) key.
"""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import OperationFailure

# The indexes schema 1 keyed on ``_id`` that the (tenant, id) ones replace: (collection, name).
SUPERSEDED = (("solutions", "tenant_1_created_at_-1__id_-1"), ("solution_applications", "applications_export"))


def set_ids(collection: Any) -> int:
    """Give every document of ``collection`` without an ``id`` its ``_id`` as ``id``; how many.

    A one-time pass over the whole collection, by design (no index can hold a field not yet
    written); an empty collection, as a new deployment's, is not read at all."""
    if not collection.estimated_document_count():
        return 0
    return collection.update_many({"id": {"$exists": False}}, [{"$set": {"id": "$_id"}}]).modified_count


def migrate(db: Any) -> None:
    """Schema 2: ``id`` on every document, the (tenant, id) indexes, the superseded ones dropped."""
    solutions, applications = db["solutions"], db["solution_applications"]
    for collection in (solutions, applications):
        set_ids(collection)
    solutions.create_index([("tenant", ASCENDING), ("id", ASCENDING)], name="solution_id", unique=True)
    solutions.create_index([("tenant", ASCENDING), ("created_at", DESCENDING), ("id", DESCENDING)])
    solutions.create_index([("tenant", ASCENDING), ("title", ASCENDING), ("category", ASCENDING)])
    # Also the export's keyset pages (tenant, id > last, sorted by id).
    applications.create_index([("tenant", ASCENDING), ("id", ASCENDING)], name="application_id", unique=True)
    applications.create_index([("tenant", ASCENDING), ("at", DESCENDING)])
    applications.create_index([("tenant", ASCENDING), ("solution_id", ASCENDING)])
    for name, index in SUPERSEDED:
        if index in db[name].index_information():
            try:
                db[name].drop_index(index)
            except OperationFailure:
                pass  # dropped by another process starting at the same time
