"""The warm per-project search index: vectors, binary codes and BM25 postings in RAM.

A long-lived process (a warm Lambda container, ``capsule serve``, ``capsule mcp``) keeps one
:class:`ProjectIndex` per (tenant, project, embedding model). It is loaded once from the
store and then kept current by reading only the rows changed since the version it holds
(:meth:`MemoryStore.changes_since`), so a warm search reads no embeddings from the store.
A one-shot process builds the same index and throws it away: cold and warm searches run
the very same code on the same rows, which is why their results are identical.

Vectors live in one contiguous float32 matrix; beside it, the sign bit of every dimension,
packed (1024-d -> 128 bytes). The first stage ranks rows by Hamming distance to the query's
sign bits (``np.bitwise_count`` over 64-bit words); the best few hundred, with every tie at
the cut, are then scored exactly in float32. Memory is bounded by :class:`IndexCache`,
which drops the least recently used projects.
"""

from __future__ import annotations

import threading
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, fields, replace
from itertools import chain
from typing import Callable, Sequence

import numpy as np

from .clock import from_epoch, to_epoch
from .records import ChangeSet, Filters, MemoryRecord
from .text import tokens

OUTCOME = {"success": 0.10, "failure": -0.05}


def _grow(values: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, *values.shape[1:]), dtype=values.dtype)
    grown[: len(values)] = values
    return grown


def sign_codes(vectors: np.ndarray, words: int) -> np.ndarray:
    """Packed sign bits of each row, padded to ``words`` 64-bit words: (rows, words) uint64."""
    bits = np.packbits(np.asarray(vectors) > 0, axis=-1)
    padded = np.zeros((*bits.shape[:-1], words * 8), dtype=np.uint8)
    padded[..., : bits.shape[-1]] = bits
    return padded.view(np.uint64)


def stable_key(memory_id: str) -> int:
    """A tie-break key for a memory that is the same in every process (unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(memory_id.encode(), digest_size=8).digest(), "little") >> 1


@dataclass(slots=True)
class Shape:
    """The shape of a project's memories, which decides which ranking aids fit it.

    ``prev``/``next``: the row before and after each row in its session (by when it happened),
    -1 at a session's ends or for rows without a session. ``median_length``: keyword tokens per
    memory. ``median_session``: memories per session, over rows that have a session.
    """

    prev: np.ndarray
    next: np.ndarray
    median_length: float
    median_session: float

    @classmethod
    def of(cls, index: "ProjectIndex") -> "Shape":
        n = index.n
        prev = np.full(n, -1, dtype=np.int64)
        nxt = np.full(n, -1, dtype=np.int64)
        alive = np.flatnonzero(index.alive[:n])
        lengths = index.length[alive]
        median_length = float(np.median(lengths)) if alive.size else 0.0
        grouped = alive[index.session[alive] >= 0]
        if grouped.size == 0:
            return cls(prev, nxt, median_length, 0.0)
        order = grouped[np.lexsort((index.key[grouped], index.occurred[grouped], index.session[grouped]))]
        same = index.session[order[1:]] == index.session[order[:-1]]
        prev[order[1:][same]] = order[:-1][same]
        nxt[order[:-1][same]] = order[1:][same]
        sizes = np.unique(index.session[grouped], return_counts=True)[1]
        return cls(prev, nxt, median_length, float(np.median(sizes)))


# Every field but the embedding (the matrix holds it), so a field added later is kept too.
_FIELDS = tuple(f.name for f in fields(MemoryRecord) if f.name != "embedding")
_TIMES = frozenset(f.name for f in fields(MemoryRecord) if f.name.endswith("_at"))


def pack(record: MemoryRecord) -> tuple:
    """A record as plain values (times as epoch seconds): quick to pickle and to load."""
    return tuple(None if (v := getattr(record, name)) is None else to_epoch(v) if name in _TIMES else v
                 for name in _FIELDS)


def unpack(values: tuple) -> MemoryRecord:
    fields = {name: (from_epoch(v) if name in _TIMES else v) for name, v in zip(_FIELDS, values)}
    return MemoryRecord(**fields)


class Records:
    """The index's records by row; rows loaded from a snapshot are built on first use."""

    def __init__(self, packed: list[tuple | None] | None = None) -> None:
        self._items: list[MemoryRecord | tuple | None] = list(packed or [])

    def __len__(self) -> int:
        return len(self._items)

    def append(self, record: MemoryRecord | None) -> None:
        self._items.append(record)

    def __setitem__(self, row: int, record: MemoryRecord | None) -> None:
        self._items[row] = record

    def __getitem__(self, row: int) -> MemoryRecord | None:
        item = self._items[row]
        if isinstance(item, tuple):
            item = self._items[row] = unpack(item)
        return item

    def packed(self) -> list[tuple | None]:
        return [item if item is None or isinstance(item, tuple) else pack(item) for item in self._items]


class ProjectIndex:
    """Every active memory of one project, ready to search. Guard with :attr:`lock`."""

    def __init__(self, tenant: str, project: str, model_id: str | None) -> None:
        self.tenant, self.project, self.model_id = tenant, project, model_id
        self.lock = threading.RLock()
        self.version = 0
        self._clear()

    def _clear(self) -> None:
        self.records = Records()
        self.row_of: dict[str, int] = {}
        self.n = 0
        self.dead = 0
        self.dim = 0
        self.words = 0
        cap = 16
        self.alive = np.zeros(cap, dtype=bool)
        self.has_vec = np.zeros(cap, dtype=bool)
        self.matrix = np.zeros((cap, 0), dtype=np.float32)
        self.codes = np.zeros((0, cap), dtype=np.uint64)  # (words, rows): one word is contiguous
        self._bytes = 0
        self.length = np.zeros(cap, dtype=np.float64)
        self.occurred = np.zeros(cap, dtype=np.float64)
        self.created = np.zeros(cap, dtype=np.float64)
        self.helpful = np.zeros(cap, dtype=np.float64)
        self.unhelpful = np.zeros(cap, dtype=np.float64)
        self.outcome = np.zeros(cap, dtype=np.float64)
        self.key = np.zeros(cap, dtype=np.int64)
        self.session = np.full(cap, -1, dtype=np.int64)  # id of meta.session, -1: none
        self.author = np.full(cap, -1, dtype=np.int64)  # id of meta.author, -1: none
        self.sessions: dict[str, int] = {}
        self.authors: dict[str, int] = {}
        self._shape: Shape | None = None
        self.postings: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    # ---- snapshots -------------------------------------------------------

    _ARRAYS = ("alive", "has_vec", "matrix", "length", "occurred", "created", "helpful", "unhelpful", "outcome",
               "key", "session", "author")

    def export(self) -> dict:
        """Everything the index holds, trimmed to its rows (for :mod:`capsule.snapshot`)."""
        arrays = {name: getattr(self, name)[: self.n] for name in self._ARRAYS}
        arrays["codes"] = np.ascontiguousarray(self.codes[:, : self.n])
        return {
            "arrays": arrays, "n": self.n, "dead": self.dead, "dim": self.dim, "words": self.words,
            "version": self.version, "bytes": self._bytes, "records": self.records.packed(), "row_of": self.row_of,
            "sessions": self.sessions, "authors": self.authors, "postings": self._packed_postings(),
        }

    def _packed_postings(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """Every term's postings in two flat arrays with offsets: four objects, not one per term."""
        terms = list(self.postings)
        parts = [self.postings_of(term) for term in terms]
        offsets = np.cumsum([0] + [rows.size for rows, _ in parts], dtype=np.int64)
        rows = np.concatenate([r for r, _ in parts]) if parts else np.zeros(0, np.int32)
        tfs = np.concatenate([t for _, t in parts]) if parts else np.zeros(0, np.float32)
        return terms, offsets, rows, tfs

    def restore(self, state: dict) -> None:
        """Become the index :meth:`export` described."""
        self._clear()
        for name, values in state["arrays"].items():
            setattr(self, name, values)
        if self.matrix.ndim != 2 or self.codes.ndim != 2:
            raise ValueError("a snapshot's matrix and codes are two-dimensional")
        self.n, self.dead, self.dim, self.words = state["n"], state["dead"], state["dim"], state["words"]
        self.version, self._bytes = state["version"], state["bytes"]
        self.records, self.row_of = Records(state["records"]), state["row_of"]
        self.sessions, self.authors = state["sessions"], state["authors"]
        terms, offsets, rows, tfs = state["postings"]
        bounds = offsets.tolist()
        self._arrays = {term: (rows[bounds[i]:bounds[i + 1]], tfs[bounds[i]:bounds[i + 1]])
                        for i, term in enumerate(terms)}
        self.postings = {term: [arrays] for term, arrays in self._arrays.items()}

    # ---- size ------------------------------------------------------------

    @property
    def active(self) -> int:
        return self.n - self.dead

    def nbytes(self) -> int:
        """About how much RAM the index holds (kept as rows are added, not recounted)."""
        arrays = (self.matrix, self.codes, self.length, self.occurred, self.created, self.helpful,
                  self.unhelpful, self.outcome)
        return sum(a.nbytes for a in arrays) + self._bytes

    # ---- keeping current -----------------------------------------------------

    @staticmethod
    def _id_of(names: dict[str, int], name: object) -> int:
        if not isinstance(name, str) or not name:
            return -1
        return names.setdefault(name, len(names))

    def apply(self, changes: ChangeSet) -> None:
        """Bring the index to ``changes.version``. The index takes over the records given."""
        self._shape = None
        if changes.reset:
            self._clear()
        for memory_id in changes.removed:
            self._kill(memory_id)
        fresh: list[MemoryRecord] = []
        for record in changes.changed:
            row = self.row_of.get(record.id)
            if row is not None and self._same_text_and_vector(row, record):
                record.embedding = None
                self.records[row] = record
                self._set_meta(row, record)
            else:
                self._kill(record.id)
                fresh.append(record)
        self._append(fresh)
        self.version = max(self.version, changes.version) if not changes.reset else changes.version
        if self.dead > 1000 and self.dead > self.n // 2:
            self._compact()

    def _same_text_and_vector(self, row: int, record: MemoryRecord) -> bool:
        old = self.records[row]
        if old is None or old.content != record.content:
            return False
        usable = self._usable(record)
        if usable != bool(self.has_vec[row]):
            return False
        return not usable or np.array_equal(self.matrix[row], record.embedding)

    def _usable(self, record: MemoryRecord) -> bool:
        return record.embedding is not None and record.model == self.model_id and record.embedding.size > 0

    def _kill(self, memory_id: str) -> None:
        row = self.row_of.pop(memory_id, None)
        if row is not None:
            self.alive[row] = False
            self.records[row] = None
            self.dead += 1

    def _reserve(self, extra: int, dim: int) -> None:
        need = self.n + extra
        if dim and not self.dim:
            self.dim, self.words = dim, (dim + 63) // 64
            self.matrix = np.zeros((len(self.alive), dim), dtype=np.float32)
            self.codes = np.zeros((self.words, len(self.alive)), dtype=np.uint64)
        if need <= len(self.alive):
            return
        cap = max(need, 2 * len(self.alive))
        for name in ("alive", "has_vec", "key", "session", "author", "matrix", "length", "occurred", "created", "helpful",
                     "unhelpful", "outcome"):
            setattr(self, name, _grow(getattr(self, name), cap))
        self.codes = np.ascontiguousarray(_grow(self.codes.T, cap).T)

    def _append(self, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        dims = {r.embedding.size for r in records if self._usable(r)}
        dim = self.dim or (max(dims) if dims else 0)
        self._reserve(len(records), dim)
        start = self.n
        vec_rows, vectors = [], []
        for offset, record in enumerate(records):
            row = start + offset
            self.row_of[record.id] = row
            self.records.append(record)
            if self._usable(record) and record.embedding.size == self.dim:
                vec_rows.append(row)
                vectors.append(record.embedding)
            record.embedding = None  # the index owns the records it is given; the matrix holds the vector
        rows = slice(start, start + len(records))
        self.alive[rows] = True
        self.key[rows] = [stable_key(r.id) for r in records]
        self.occurred[rows] = [to_epoch(r.occurred_at) for r in records]
        self.created[rows] = [to_epoch(r.created_at) for r in records]
        self.helpful[rows] = [r.helpful for r in records]
        self.unhelpful[rows] = [r.unhelpful for r in records]
        self.outcome[rows] = [OUTCOME.get(r.meta.get("outcome_status") or "unknown", 0.0) for r in records]
        self.session[rows] = [self._id_of(self.sessions, r.meta.get("session")) for r in records]
        self.author[rows] = [self._id_of(self.authors, r.meta.get("author")) for r in records]
        self._add_postings(start, [tokens(r.content) for r in records])
        self._bytes += sum(2 * len(r.content) + 300 for r in records)
        self.n = start + len(records)
        if vectors:
            block = np.stack(vectors).astype(np.float32, copy=False)
            at = np.asarray(vec_rows)
            self.matrix[at] = block
            self.codes[:, at] = sign_codes(block, self.words).T
            self.has_vec[at] = True

    def _add_postings(self, start: int, documents: list[list[str]]) -> None:
        """Term frequencies of new rows, grouped by term in bulk (numpy, not a loop per token)."""
        lengths = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
        self.length[start:start + len(documents)] = lengths
        flat = list(chain.from_iterable(documents))
        if not flat:
            return
        vocab: dict[str, int] = {}
        term_ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t in flat), dtype=np.int64, count=len(flat))
        docs = np.repeat(np.arange(len(documents), dtype=np.int64), lengths)
        pairs, tfs = np.unique(term_ids * len(documents) + docs, return_counts=True)
        term_of, doc_of = np.divmod(pairs, len(documents))
        cuts = np.flatnonzero(np.diff(term_of)) + 1
        names = list(vocab)
        for lo, hi in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [pairs.size]))):
            term = names[term_of[lo]]
            chunk = ((doc_of[lo:hi] + start).astype(np.int32), tfs[lo:hi].astype(np.float32))
            self.postings.setdefault(term, []).append(chunk)
            self._arrays.pop(term, None)
        self._bytes += 8 * pairs.size

    def _set_meta(self, row: int, record: MemoryRecord) -> None:
        """Refresh what ranking reads of a row whose text and vector did not change."""
        self.occurred[row] = to_epoch(record.occurred_at)
        self.created[row] = to_epoch(record.created_at)
        self.helpful[row] = record.helpful
        self.unhelpful[row] = record.unhelpful
        self.outcome[row] = OUTCOME.get(record.meta.get("outcome_status") or "unknown", 0.0)
        self.session[row] = self._id_of(self.sessions, record.meta.get("session"))
        self.author[row] = self._id_of(self.authors, record.meta.get("author"))

    def _compact(self) -> None:
        keep = [row for row in range(self.n) if self.alive[row]]
        records = []
        for row in keep:
            record = self.records[row]
            assert record is not None
            if self.has_vec[row]:
                record = replace(record, embedding=self.matrix[row].copy(), model=self.model_id)
            records.append(record)
        version = self.version
        self._clear()
        self._append(records)
        self.version = version

    # ---- reading -------------------------------------------------------------

    def shape(self) -> "Shape":
        """What the memories look like (lengths, sessions, neighbours), computed once per version."""
        if self._shape is None:
            self._shape = Shape.of(self)
        return self._shape

    def postings_of(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Rows holding ``term`` and how often (dead rows included; the caller masks them)."""
        cached = self._arrays.get(term)
        if cached is None:
            chunks = self.postings.get(term)
            if not chunks:
                cached = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
            else:
                cached = (np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks]))
                if len(chunks) > 1:
                    self.postings[term] = [cached]
            self._arrays[term] = cached
        return cached

    def mask(self, filters: Filters) -> np.ndarray:
        """Rows that are active and pass the filters."""
        mask = self.alive[: self.n].copy()
        if filters.since:
            mask &= self.created[: self.n] >= to_epoch(filters.since)
        if filters.until:
            mask &= self.created[: self.n] < to_epoch(filters.until)
        if filters.component or filters.category or filters.tags or filters.path_prefix:
            for row in np.flatnonzero(mask):
                record = self.records[row]
                if record is None or not _passes(record, filters):
                    mask[row] = False
        return mask


def _passes(record: MemoryRecord, filters: Filters) -> bool:
    meta = record.meta
    if filters.component and meta.get("component") != filters.component:
        return False
    if filters.category and meta.get("category") != filters.category:
        return False
    tags = meta.get("tags") or []
    if any(tag not in tags for tag in filters.tags):
        return False
    if filters.path_prefix and not (record.path or "").startswith(filters.path_prefix):
        return False
    return True


class IndexCache:
    """Project indexes of one process, least recently used dropped beyond ``max_bytes``."""

    def __init__(self, max_bytes: int = 1 << 30) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._indexes: OrderedDict[tuple[str, str, str | None], ProjectIndex] = OrderedDict()

    def get(self, tenant: str, project: str, model_id: str | None) -> ProjectIndex:
        key = (tenant, project, model_id)
        with self._lock:
            index = self._indexes.get(key)
            if index is None:
                index = self._indexes[key] = ProjectIndex(tenant, project, model_id)
            self._indexes.move_to_end(key)
            return index

    def trim(self, keep: Callable[[ProjectIndex], bool] = lambda _: False) -> list[tuple[str, str]]:
        """Drop least recently used indexes until the rest fit; returns what was dropped."""
        dropped = []
        with self._lock:
            sizes = {key: index.nbytes() for key, index in self._indexes.items()}
            total = sum(sizes.values())
            for key in list(self._indexes):
                if total <= self.max_bytes or len(self._indexes) <= 1:
                    break
                if keep(self._indexes[key]):
                    continue
                del self._indexes[key]
                total -= sizes[key]
                dropped.append(key[:2])
        return dropped

    def __len__(self) -> int:
        return len(self._indexes)
