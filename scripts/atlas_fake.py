"""A stand-in for an Atlas cluster that executes ``$vectorSearch`` and ``$search`` honestly, for tests and benches.

mongomock has no ``$vectorSearch``, ``$search`` (nor ``$text``). This fake answers them: exact
cosine over every memory that passes the pre-filter (numCandidates and limit respected, Atlas's
score ``(1 + cos) / 2``); Atlas Search's ``$search`` with the index's own custom analyzer and
Lucene's BM25 over the whole index (scripts/atlas_fake_search.py); and a ``$text`` search that,
like the server, refuses a query without an equality on the text index's prefix keys. Search
indexes are listed as ``$listSearchIndexes`` lists them and become queryable after
``ready_after`` listings (a query before then answers nothing, as on Atlas); creating one that
exists fails as on Atlas. It refuses every other read of the memories
(:class:`ProjectLoaded`), so a test that searches through it proves nothing else read the
project. The other collections are mongomock.

Every call is one round trip on an emulated wire: the command and the reply (BSON-encoded,
split into batches as a server does: 101 documents or the batchSize first, then 16 MiB per
getMore) go to pymongo ``CommandListener`` objects, and the caller gets the documents decoded
from that BSON, as the driver would hand them over. :class:`OperationCounter` is an ordinary
pymongo listener: ``MongoClient(uri, event_listeners=[counter])`` counts a real cluster the same way.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

import bson
import numpy as np
from bson.binary import Binary, BinaryVectorDtype
from bson.codec_options import CodecOptions
from pymongo import monitoring
from pymongo.errors import OperationFailure

from scripts.atlas_fake_search import (
    Postings,
    analyzer_for,
    bm25,
    filter_query,
    mapped_fields,
)

CODEC = CodecOptions(tz_aware=True)
FIRST_BATCH = 101
BATCH_BYTES = 16 * 1024 * 1024
_WORD = re.compile(r"[0-9a-z]+")


class ProjectLoaded(AssertionError):
    """A read of the memories that is not a bounded index query."""


class OperationCounter(monitoring.CommandListener):
    """Operations, reply bytes and time per command, from pymongo's command monitoring."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.operations, self.reply_bytes, self.seconds = 0, 0, 0.0
        self.commands: list[str] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.operations += 1
        self.commands.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self.reply_bytes += len(bson.encode(event.reply))
        self.seconds += event.duration_micros / 1e6

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        self.seconds += event.duration_micros / 1e6


class Wire:
    """Publishes each round trip to the listeners and returns what the driver would decode."""

    def __init__(self, listeners: Sequence[monitoring.CommandListener], database: str) -> None:
        self.listeners, self.database = list(listeners), database
        self._ids = itertools.count(1)

    def _publish(self, name: str, command: dict[str, Any], reply: dict[str, Any], seconds: float) -> None:
        request = next(self._ids)
        started = monitoring.CommandStartedEvent(
            {name: command.get(name, 1), **command}, self.database, request, ("fake-atlas", 27017), request
        )
        done = monitoring.CommandSucceededEvent(
            timedelta(seconds=seconds),
            reply,
            name,
            request,
            ("fake-atlas", 27017),
            request,
            database_name=self.database,
        )
        for listener in self.listeners:
            listener.started(started)
            listener.succeeded(done)

    def call(self, name: str, command: dict[str, Any], reply: dict[str, Any], seconds: float) -> dict[str, Any]:
        self._publish(name, command, reply, seconds)
        return bson.decode(bson.encode(reply), CODEC)

    def cursor(
        self, name: str, command: dict[str, Any], docs: list[dict[str, Any]], seconds: float, first: int = FIRST_BATCH
    ) -> list[dict[str, Any]]:
        """A cursor's documents in the batches a server sends (each batch one round trip)."""
        out: list[dict[str, Any]] = []
        batch, rest = docs[:first], docs[first:]
        key = "firstBatch"
        while True:
            reply = {"cursor": {key: batch, "id": 1 if rest else 0, "ns": f"{self.database}.x"}, "ok": 1.0}
            out.extend(self.call(name, command, reply, seconds)["cursor"][key])
            if not rest:
                return out
            name, command, key, seconds = "getMore", {"getMore": 1}, "nextBatch", 0.0
            batch, size = [], 0
            while rest and (not batch or size + len(bson.encode(rest[0])) <= BATCH_BYTES):
                size += len(bson.encode(rest[0]))
                batch.append(rest.pop(0))


class Monitored:
    """A mongomock collection whose every call is one monitored round trip."""

    _CURSORS = {"find", "aggregate", "list_indexes"}

    def __init__(self, inner: Any, wire: Wire) -> None:
        self._inner, self._wire = inner, wire
        self.name = inner.name

    def __getattr__(self, attr: str) -> Any:
        method = getattr(self._inner, attr)
        if not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            kwargs.pop("session", None)
            start = time.perf_counter()
            result = method(*args, **kwargs)
            if attr in self._CURSORS:
                docs = list(result)
                return self._wire.cursor(attr, {"collection": self.name}, docs, time.perf_counter() - start)
            seconds = time.perf_counter() - start
            if isinstance(result, dict) or result is None:
                value = self._wire.call(attr, {"collection": self.name}, {"value": result, "ok": 1.0}, seconds)
                return value["value"]
            self._wire.call(attr, {"collection": self.name}, {"n": 1, "ok": 1.0}, seconds)
            return result

        return call


# ---- the memories: a corpus the fake searches ----------------------------------------------


class DocsCorpus:
    """Memories held as documents (tests): columns for the pre-filter keys, a vector matrix."""

    COLUMNS = ("tenant", "project", "model", "active")

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.docs: list[dict[str, Any]] = []
        self.vectors: list[np.ndarray | None] = []
        self._postings: dict[str, dict[int, int]] = {}
        self._columns: dict[str, np.ndarray] | None = None
        self._matrix: np.ndarray | None = None

    def add(self, docs: Iterable[dict[str, Any]]) -> None:
        for doc in docs:
            doc = dict(doc)
            raw = doc.pop("embedding", None)
            self.vectors.append(None if raw is None else np.frombuffer(raw, "<f4", offset=2).copy())
            row = len(self.docs)
            self.docs.append(doc)
            for word in _WORD.findall(doc["content"].lower()):
                counts = self._postings.setdefault(word, {})
                counts[row] = counts.get(row, 0) + 1
        self._columns = self._matrix = None

    @property
    def n(self) -> int:
        return len(self.docs)

    def columns(self) -> dict[str, np.ndarray]:
        if self._columns is None:
            self._columns = {key: np.array([d.get(key) for d in self.docs], dtype=object) for key in self.COLUMNS}
            self._columns["active"] = self._columns["active"].astype(bool)
        return self._columns

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """(vectors, has_vector) with zeros where a memory has none."""
        if self._matrix is None:
            self._matrix = np.zeros((self.n, self.dim), dtype=np.float32)
            for row, vector in enumerate(self.vectors):
                if vector is not None:
                    self._matrix[row] = vector
        return self._matrix, np.array([v is not None for v in self.vectors], dtype=bool)

    def doc(self, row: int) -> dict[str, Any]:
        return self.docs[row]

    def content(self, row: int) -> str:
        return self.docs[row]["content"]

    def vector(self, row: int) -> np.ndarray | None:
        return self.vectors[row]

    def term_rows(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        counts = self._postings.get(word, {})
        return np.fromiter(counts, dtype=np.int64, count=len(counts)), np.fromiter(
            counts.values(), dtype=np.int64, count=len(counts)
        )


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _encode(vector: np.ndarray | None) -> Binary | None:
    return None if vector is None else Binary.from_vector(np.asarray(vector, np.float32), BinaryVectorDtype.FLOAT32)


def _project(doc: dict[str, Any], projection: dict[str, Any] | None, meta: dict[str, float]) -> dict[str, Any]:
    out = dict(doc)
    for key, spec in (projection or {}).items():
        if isinstance(spec, dict) and "$meta" in spec:
            out[key] = meta[spec["$meta"]]
        elif spec in (0, False):
            out.pop(key, None)
    return out


class FakeMemories:
    """The ``memories`` collection of an Atlas cluster: $vectorSearch and $text only."""

    name = "memories"

    def __init__(self, corpus: Any, wire: Wire, *, applies: Callable[[dict, dict], bool], ready_after: int = 0) -> None:
        self.corpus, self._wire, self._applies = corpus, wire, applies
        self.search_indexes: dict[str, dict[str, Any]] = {}  # name -> definition
        self.search_state: dict[str, dict[str, Any]] = {}  # name -> type, status, listings left
        self.ready_after = ready_after
        self.indexes: dict[str, list[tuple[str, Any]]] = {}
        self._postings: tuple[Any, Postings] | None = None

    # -- indexes
    def create_index(self, keys: list[tuple[str, Any]], **options: Any) -> str:
        self.indexes[options["name"]] = list(keys)
        return options["name"]

    def index_information(self) -> dict[str, Any]:
        return {name: {"key": keys} for name, keys in self.indexes.items()}

    def drop_index(self, name: str) -> None:
        self.indexes.pop(name)

    def create_search_index(self, model: Any) -> str:
        document = model.document
        name = document["name"]
        self._wire.call("createSearchIndexes", {"createSearchIndexes": self.name}, {"ok": 1.0}, 0.0)
        if name in self.search_indexes:
            raise OperationFailure(f"Index already exists with name {name}", code=68)
        self.search_indexes[name] = document["definition"]
        self.search_state[name] = {"type": document.get("type", "search"), "left": self.ready_after, "version": 0}
        return name

    def update_search_index(self, name: str, definition: dict[str, Any]) -> None:
        self._wire.call("updateSearchIndex", {"updateSearchIndex": self.name}, {"ok": 1.0}, 0.0)
        if name not in self.search_indexes:
            raise OperationFailure(f"Index {name} not found", code=27)
        self.search_indexes[name] = definition  # Atlas serves the old definition until the new one is built
        self.search_state[name]["version"] += 1

    def list_search_indexes(self, name: str | None = None, **_: Any) -> list[dict[str, Any]]:
        docs = []
        for index, state in self.search_state.items():
            if name is not None and index != name:
                continue
            queryable = state["left"] <= 0
            state["left"] -= 1
            docs.append(
                {
                    "id": f"id-{index}",
                    "name": index,
                    "type": state["type"],
                    "status": "READY" if queryable else "BUILDING",
                    "queryable": queryable,
                    "latestDefinitionVersion": {"version": state["version"]},
                    "latestDefinition": self.search_indexes[index],
                }
            )
        return self._wire.cursor("aggregate", {"aggregate": self.name, "pipeline": "[$listSearchIndexes]"}, docs, 0.0)

    def _queryable(self, name: str, kind: str) -> dict[str, Any] | None:
        """The definition of a queryable index of ``kind``; None (no hits, as on Atlas) while it builds."""
        state = self.search_state.get(name)
        if state is None or state["left"] > 0:
            return None
        if state["type"] != kind:
            raise OperationFailure(f"index '{name}' is a {state['type']} index, not {kind}")
        return self.search_indexes[name]

    def __getattr__(self, attr: str) -> Any:
        raise ProjectLoaded(f"memories.{attr}: only $vectorSearch and $text reads are bounded")

    # -- the pre-filter
    def _eligible(self, query: dict[str, Any]) -> np.ndarray:
        columns = self.corpus.columns()
        mask = np.ones(self.corpus.n, dtype=bool)
        clauses = query["$and"] if set(query) == {"$and"} else [{k: v} for k, v in query.items()]
        rest = []
        for clause in clauses:
            ((key, value),) = clause.items()
            if key not in columns:
                rest.append(clause)
                continue
            column = columns[key]
            if isinstance(value, dict) and set(value) == {"$in"}:
                mask &= np.isin(column, list(value["$in"]))
            elif isinstance(value, dict):
                raise OperationFailure(f"the fake does not evaluate {value} on {key}")
            else:
                mask &= column == value
        if rest:
            for row in np.flatnonzero(mask):
                doc = self.corpus.doc(int(row))
                mask[row] = all(self._applies(clause, doc) for clause in rest)
        return mask

    def _reply_doc(self, row: int) -> dict[str, Any]:
        return {**self.corpus.doc(row), "embedding": _encode(self.corpus.vector(row))}

    def aggregate(self, pipeline: list[dict[str, Any]], batchSize: int | None = None, **_: Any) -> list[dict]:
        if pipeline and "$search" in pipeline[0]:
            return self._search(pipeline, batchSize)
        if not pipeline or "$vectorSearch" not in pipeline[0]:
            raise ProjectLoaded(f"memories.aggregate without $vectorSearch or $search first: {list(pipeline[0])}")
        return self._vector_search(pipeline, batchSize)

    # -- $search
    def _search(self, pipeline: list[dict[str, Any]], batchSize: int | None) -> list[dict]:
        start = time.perf_counter()
        stage = pipeline[0]["$search"]
        found = self._matches(stage, counting=False)
        if found is None:
            return self._wire.cursor("aggregate", {"aggregate": "memories"}, [], 0.0)
        hits, score = found
        own = [s for s in pipeline[1:] if "$unionWith" not in s]
        docs = self._after_search(hits, score, own)
        for union in (s["$unionWith"] for s in pipeline[1:] if "$unionWith" in s):
            docs.extend(self._union(union))
        return self._wire.cursor(
            "aggregate",
            {"aggregate": "memories", "pipeline": "[$search...]"},
            docs,
            time.perf_counter() - start,
            first=batchSize or FIRST_BATCH,
        )

    def _union(self, union: dict[str, Any]) -> list[dict[str, Any]]:
        """A ``$unionWith`` of this collection whose pipeline is ``$searchMeta`` (a count), then ``$addFields``."""
        sub = union["pipeline"]
        if union["coll"] != self.name or not sub or "$searchMeta" not in sub[0]:
            raise OperationFailure("the fake evaluates $unionWith [$searchMeta, ...] on the memories only")
        meta = sub[0]["$searchMeta"]
        if meta.get("count", {}).get("type") != "total":
            raise OperationFailure("the fake counts with count: {type: total} only")
        found = self._matches(meta, counting=True)
        doc: dict[str, Any] = {"count": {"total": 0 if found is None else int(found[0].size)}}
        for extra in sub[1:]:
            doc.update(extra["$addFields"])
        return [doc]

    def _matches(self, stage: dict[str, Any], *, counting: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """The rows a ``compound {filter, must: [text]}`` matches, best first, and every row's
        score; None while the index is not queryable. ``counting``: a filter alone is allowed."""
        definition = self._queryable(stage["index"], "search")
        if definition is None:
            return None
        fields = mapped_fields(definition)
        compound = stage["compound"]
        must = compound.get("must", [])
        if (
            set(compound) - {"filter", "must"}
            or len(must) > 1
            or (must and set(must[0]) != {"text"})
            or (not must and not counting)
        ):
            raise OperationFailure("the fake evaluates compound {filter, must: [text]} only")
        mask = self._eligible(filter_query(compound.get("filter", []), fields))
        if not must:
            return np.flatnonzero(mask), np.zeros(self.corpus.n)
        text = must[0]["text"]
        field = fields.get(text["path"], {})
        if field.get("type") != "string":
            raise OperationFailure(f"text: path '{text['path']}' is not indexed as string")
        analyzers = {a["name"]: a for a in definition.get("analyzers", [])}
        postings = self._postings_for(analyzers[field["analyzer"]])
        terms, _ = analyzer_for(_json(analyzers[field.get("searchAnalyzer", field["analyzer"])])).analyze(text["query"])
        score = bm25(postings, terms)
        hits = np.flatnonzero(mask & (score > 0))
        return hits[np.argsort(-score[hits], kind="stable")], score

    def build_search_indexes(self) -> None:
        """Analyze the corpus now, as Atlas does when it builds an index (benches: not inside a search)."""
        for name, state in self.search_state.items():
            if state["type"] == "search":
                definition = self.search_indexes[name]
                fields = mapped_fields(definition)
                analyzers = {a["name"]: a for a in definition.get("analyzers", [])}
                self._postings_for(analyzers[fields["content"]["analyzer"]])

    def _postings_for(self, analyzer: dict[str, Any]) -> Postings:
        key = (_json(analyzer), self.corpus.n)
        if self._postings is None or self._postings[0] != key:
            analyze = analyzer_for(key[0]).analyze
            self._postings = (key, Postings((self.corpus.content(r) for r in range(self.corpus.n)), analyze))
        return self._postings[1]

    def _after_search(self, hits: np.ndarray, score: np.ndarray, stages: list[dict[str, Any]]) -> list[dict]:
        """$match, $limit, $addFields ({$meta: searchScore}) and an exclusion $project, in order,
        reading documents lazily (a $limit after a $search stops the walk, as mongot's cursor does)."""
        limit = next((s["$limit"] for s in stages if "$limit" in s), None)
        matches = [s["$match"] for s in stages if "$match" in s]
        added = next((s["$addFields"] for s in stages if "$addFields" in s), {})
        projection = next((s["$project"] for s in stages if "$project" in s), None)
        out = []
        for row in hits:
            doc = self._reply_doc(int(row))
            if not all(self._applies(m, doc) for m in matches):
                continue
            for key, spec in added.items():
                doc[key] = float(score[row]) if spec == {"$meta": "searchScore"} else spec
            out.append(_project(doc, projection, {}))
            if limit is not None and len(out) >= limit:
                break
        return out

    # -- $vectorSearch
    def _vector_search(self, pipeline: list[dict[str, Any]], batchSize: int | None) -> list[dict]:
        start = time.perf_counter()
        stage = pipeline[0]["$vectorSearch"]
        definition = self._queryable(stage["index"], "vectorSearch")
        if definition is None:
            return self._wire.cursor("aggregate", {"aggregate": "memories"}, [], 0.0)  # Atlas: no index, no hits
        fields = {f["path"]: f for f in definition["fields"]}
        quantization = fields[stage["path"]].get("quantization", "none")
        if quantization not in ("none", "scalar", "binary"):
            raise OperationFailure(f"quantization must be none, scalar or binary, not {quantization!r}")
        paths = {key for clause in stage["filter"].get("$and", [stage["filter"]]) for key in clause}
        missing = sorted(p for p in paths if fields.get(p, {}).get("type") != "filter")
        if missing:
            raise OperationFailure(f"Path '{missing[0]}' needs to be indexed as filter")
        if not stage["limit"] <= stage["numCandidates"] <= 10_000:
            raise OperationFailure("numCandidates must be at least limit and at most 10000")
        query = np.frombuffer(stage["queryVector"], "<f4", offset=2)
        if fields[stage["path"]]["numDimensions"] != query.size:
            raise OperationFailure("queryVector has the wrong number of dimensions")
        matrix, has = self.corpus.matrix()
        rows = np.flatnonzero(self._eligible(stage["filter"]) & has)
        sims = np.empty(rows.size, dtype=np.float32)
        for at in range(0, rows.size, 2048):  # in blocks: the cluster's scratch stays near 8 MB
            part = rows[at : at + 2048]
            block = np.asarray(matrix[part], dtype=np.float32)
            sims[at : at + part.size] = block @ query / np.maximum(np.linalg.norm(block, axis=1), 1e-12)
        # Exact: the numCandidates nearest are exactly the nearest, and the limit the best of them.
        take = min(stage["numCandidates"], rows.size)
        best = np.argpartition(-sims, take - 1)[:take] if take else np.zeros(0, np.int64)
        best = best[np.argsort(-sims[best], kind="stable")][: stage["limit"]]
        docs = []
        for i in best:
            doc = self._reply_doc(int(rows[i]))
            meta = {"vectorSearchScore": float((1 + sims[i]) / 2)}
            if all(self._applies(s["$match"], doc) for s in pipeline[1:] if "$match" in s):
                projections = [s["$project"] for s in pipeline[1:] if "$project" in s]
                docs.append(_project(doc, projections[0] if projections else None, meta))
        return self._wire.cursor(
            "aggregate",
            {"aggregate": "memories", "pipeline": "[...]"},
            docs,
            time.perf_counter() - start,
            first=batchSize or FIRST_BATCH,
        )

    # -- $text
    def _text_index(self) -> list[tuple[str, Any]]:
        for keys in self.indexes.values():
            if any(kind == "text" for _, kind in keys):
                return keys
        raise OperationFailure("text index required for $text query", code=27)

    def find(
        self,
        filter: dict[str, Any],
        projection: dict[str, Any] | None = None,
        *,
        sort: Any = None,
        limit: int = 0,
        **_: Any,
    ) -> list[dict[str, Any]]:
        start = time.perf_counter()
        if "$text" not in filter:
            raise ProjectLoaded(f"memories.find without $text: {sorted(filter)}")
        if not limit:
            raise ProjectLoaded("memories.find($text) without a limit reads every match")
        keys = self._text_index()
        prefix = list(itertools.takewhile(lambda k: k[1] != "text", keys))
        if any(isinstance(filter.get(key), (dict, list)) or key not in filter for key, _ in prefix):
            raise OperationFailure(
                "failed to use text index to satisfy $text query (if text index is compound, "
                "are equality predicates given for all prefix fields?)",
                code=2,
            )
        rest = {k: v for k, v in filter.items() if k != "$text"}
        mask = self._eligible(rest)
        score = np.zeros(self.corpus.n, dtype=np.float64)
        for word in set(_WORD.findall(filter["$text"]["$search"].lower())):
            rows, counts = self.corpus.term_rows(word)
            score[rows] += counts
        hits = np.flatnonzero(mask & (score > 0))
        hits = hits[np.argsort(-score[hits], kind="stable")][:limit]
        docs = [_project(self._reply_doc(int(r)), projection, {"textScore": float(score[r])}) for r in hits]
        return self._wire.cursor(
            "find",
            {"find": "memories", "filter": "{$text...}"},
            docs,
            time.perf_counter() - start,
            first=min(limit, FIRST_BATCH),
        )


class FakeAtlasDatabase:
    """A database for :class:`~capsule.store.mongo.MongoStore`: mongomock, with the memories on
    a :class:`FakeMemories` and every call counted by ``listeners``."""

    def __init__(
        self, mock_db: Any, corpus: Any, listeners: Sequence[monitoring.CommandListener] = (), *, ready_after: int = 0
    ) -> None:
        from mongomock.filtering import filter_applies

        self._mock, self.name, self.client = mock_db, mock_db.name, mock_db.client
        self.wire = Wire(listeners, mock_db.name)
        self.memories = FakeMemories(corpus, self.wire, applies=filter_applies, ready_after=ready_after)
        self._collections: dict[str, Monitored] = {}

    def list_collection_names(self) -> list[str]:
        return ["memories", *self._mock.list_collection_names()]

    def __getitem__(self, name: str) -> Any:
        if name == "memories":
            return self.memories
        return self._collections.setdefault(name, Monitored(self._mock[name], self.wire))

    get_collection = __getitem__
