"""Import the first Capsule Memory's MongoDB ``memories`` collection into one project.

Its documents hold ``content``, ``embedding`` (a list of 1024 numbers, unit length, made by
voyage-3.5), ``embeddingNorm``, ``createdAt``, ``pinned`` and ``explanation``. Each becomes a
memory of ``project`` with its time, pin and explanation; the vector is kept when this
deployment embeds with voyage-3.5 at 1024 dimensions, else the memory waits for the
backfill job. (The first Capsule made deterministic stand-in vectors when it had no Voyage
key: name another ``source_model`` for such a database and every memory is re-embedded.)

Documents are read in ``_id`` order a page at a time. A memory's id is made from the
project and the document's ``_id``, and one with the content of an active memory of the
project is skipped, so a re-run imports nothing twice. A document that cannot be imported
is refused with its ``_id`` and field; fields the first Capsule did not write are named in
the result and otherwise left behind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from ..core.errors import InvalidInput, Unavailable
from ..embedders.base import Embedder
from .export import Sources
from .foreign import BadValue, Pending, clean_meta, kept_vector, new_memory, parse_vector, stable_id, write_memories
from .report import DataImportResult, Tally

MODEL = "voyage-3.5"
PAGE = 500
KNOWN = {"_id", "content", "embedding", "embeddingNorm", "createdAt", "pinned", "explanation"}


def import_capsule_mongo(
    src: Sources,
    tenant: str,
    uri: str,
    *,
    project: str,
    embedder: Embedder,
    database: str | None = None,
    collection: str = "memories",
    client: Any = None,
    source_model: str = MODEL,
    page: int = PAGE,
) -> DataImportResult:
    """Read the first Capsule's collection at ``uri`` into ``project`` of ``tenant``."""
    if not project.strip():
        raise InvalidInput("the project the memories go into cannot be empty", field="project")
    docs = _collection(uri, database, collection, client)
    tally = Tally(f"the first Capsule's '{collection}' collection", unit="document")
    tally.complete = True  # a collection is read whole, never cut short
    extra: Counter[str] = Counter()
    for batch in _pages(docs, page):
        pending = []
        for doc in batch:
            tally.lines += 1
            extra.update(set(doc) - KNOWN)
            try:
                pending.append(_memory(tenant, project, doc, embedder, source_model))
            except BadValue as bad:
                tally.refuse(tally.lines, bad.field, f"document {doc.get('_id')}: {bad.message}")
        write_memories(src, tenant, pending, tally)
    if extra:
        named = ", ".join(f"{name} ({n})" for name, n in sorted(extra.items()))
        tally.notes.append(f"Fields the first Capsule did not write were left behind: {named}.")
    if embedder.model_id != source_model:
        tally.notes.append(
            f"Vectors were made by {source_model}; this deployment embeds with {embedder.model_id}: "
            "the backfill job (capsule jobs run backfill) embeds the memories."
        )
    return tally.result()


def _collection(uri: str, database: str | None, collection: str, client: Any) -> Any:
    if not uri.startswith(("mongodb://", "mongodb+srv://")):
        raise InvalidInput("the first Capsule's database is a mongodb:// or mongodb+srv:// URI", field="uri")
    try:
        from pymongo.uri_parser import parse_uri

        name = database or parse_uri(uri)["database"] or "capsule"
        if client is None:
            import pymongo

            client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10_000, tz_aware=True)
        return client[name][collection]
    except ImportError as exc:
        raise Unavailable("reading MongoDB needs pymongo: pip install 'capsule-memory[mongo]'") from exc
    except Exception as exc:  # the driver's: a malformed URI
        raise InvalidInput(f"not a usable MongoDB URI: {exc}", field="uri") from exc


def _pages(docs: Any, page: int) -> Iterator[list[dict[str, Any]]]:
    from pymongo.errors import PyMongoError

    last = None
    while True:
        try:
            batch = list(docs.find({} if last is None else {"_id": {"$gt": last}}).sort("_id", 1).limit(page))
        except PyMongoError as exc:
            raise Unavailable(f"the first Capsule's database could not be read: {exc}") from exc
        if not batch:
            return
        yield batch
        last = batch[-1]["_id"]


def _memory(tenant: str, project: str, doc: dict[str, Any], embedder: Embedder, source_model: str) -> Pending:
    content = doc.get("content")
    if not isinstance(content, str) or not content.strip():
        raise BadValue("content", "a memory needs text")
    created = doc.get("createdAt")
    if not isinstance(created, datetime):
        raise BadValue("createdAt", "a date")
    created = created if created.tzinfo else created.replace(tzinfo=UTC)  # BSON dates are UTC
    pinned = doc.get("pinned", False)
    if not isinstance(pinned, bool):
        raise BadValue("pinned", "true or false")
    explanation = doc.get("explanation")
    if explanation is not None and not isinstance(explanation, str):
        raise BadValue("explanation", "a string")
    vector = parse_vector(doc.get("embedding"), "embedding")
    memory_id = stable_id("capsule-mongo", tenant, project, doc["_id"])
    meta = clean_meta({"source": "capsule-mongo"}, "meta")
    record = new_memory(
        tenant,
        project,
        memory_id,
        content,
        at=created,
        path=None,
        meta=meta,
        embedding=kept_vector(vector, source_model, embedder),
        pinned=pinned,
        explanation=explanation,
    )
    return Pending(0, record)
