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

A large project may be loaded from packed rows (:func:`pack_row`: key, times, sign bits)
without its vectors: a search then reads the vectors of just its candidates from the store
(:meth:`ProjectIndex.vectors`), and :meth:`ProjectIndex.settle`, run beside later searches,
reads the rest. Either way a row's vector is the one its sign bits were made from, so the
results are the same before, during and after.
"""

from __future__ import annotations

import mmap
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .clock import to_epoch
from . import terms
from .indexrecords import Fetch, Records, pack, unpack  # noqa: F401  (re-exported)
from .matrix import RESIDENT_MAX, SplitRows, Spill, blocked_dot, is_mapped, read_rows, resident_bytes, row_dots
from .postings import TermScores, _merged
from .governance.retention import effective_class
from .records import ChangeSet, DeferredVectors, Filters, IndexColumns, MemoryRecord
# Sign bits and packed rows (re-exported: stores and tests import them from here).
from .signbits import PACKED, Packed, pack_row, sign_codes, stable_key  # noqa: F401

OUTCOME = {"success": 0.10, "failure": -0.05}
EAGER_RECORDS = 20_000  # a smaller project loaded as columns fetches its records at once


def _grow(values: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, *values.shape[1:]), dtype=values.dtype)
    grown[: len(values)] = values
    return grown


def _lazy_zeros(rows: int, dim: int) -> np.ndarray:
    """A zero float32 matrix whose memory the OS provides a small page at a time as rows are
    written. numpy asks for huge pages for large arrays: then writing a few scattered rows
    would make the OS clear (and first gather) 2 MB for each, most of the matrix."""
    size = rows * dim * 4
    if size < 1 << 22 or not hasattr(mmap, "MADV_NOHUGEPAGE"):
        return np.zeros((rows, dim), dtype=np.float32)
    memory = mmap.mmap(-1, size)
    memory.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(memory, dtype=np.float32).reshape(rows, dim)


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
        median_length = _median(lengths) if alive.size else 0.0
        grouped = alive[index.session[alive] >= 0]
        if grouped.size == 0:
            return cls(prev, nxt, median_length, 0.0)
        order = grouped[np.lexsort((index.key[grouped], index.occurred[grouped], index.session[grouped]))]
        same = index.session[order[1:]] == index.session[order[:-1]]
        prev[order[1:][same]] = order[:-1][same]
        nxt[order[:-1][same]] = order[1:][same]
        sizes = np.unique(index.session[grouped], return_counts=True)[1]
        return cls(prev, nxt, median_length, _median(sizes))
def _median(values: np.ndarray) -> float:
    """``np.median`` of a non-empty array, the same value without the ``numpy.ma`` import it
    costs a fresh process on its first call."""
    half = values.size // 2
    if values.size % 2:
        return float(np.partition(values, half)[half])
    part = np.partition(values, (half - 1, half))
    return float((part[half - 1] + part[half]) / 2)

class ProjectIndex:
    """Every active memory of one project, ready to search. Guard with :attr:`lock`."""

    def __init__(self, tenant: str, project: str, model_id: str | None,
                 fetch: Callable[[str, str, list[str]], dict[str, MemoryRecord]] | None = None, *,
                 eager_records: int = EAGER_RECORDS) -> None:
        self.tenant, self.project, self.model_id = tenant, project, model_id
        self.fetch = fetch
        self.eager_records = eager_records
        self.lock = threading.RLock()
        self.settling = False  # a task reading its deferred vectors is scheduled (see MemoryService)
        self.version = 0
        # Where a large matrix read from the store is written instead of RAM (capsule.matrix);
        # None: held in RAM. Set by the owner (MemoryService names files beside its snapshots).
        self.spill_path: Callable[[], Path] | None = None
        # A query term's keyed hashes, for sealed memories (set by the owner; None: none sealed).
        self.term_variants: Callable[[str], list[int]] | None = None
        self._clear()

    def _fetch(self, ids: list[str]) -> dict[str, MemoryRecord]:
        assert self.fetch is not None
        return self.fetch(self.tenant, self.project, ids)

    def _clear(self) -> None:
        self.records = Records(fetch=self._fetch if self.fetch else None)
        self.row_of: dict[str, int] = {}
        self.n = 0
        self.dead = 0
        self.dim = 0
        self.words = 0
        cap = 16
        self.alive = np.zeros(cap, dtype=bool)
        self.has_vec = np.zeros(cap, dtype=bool)
        # False: the row's vector is not in the matrix yet (an index loaded with sign bits only);
        # :meth:`vectors` reads such rows from ``deferred`` and :meth:`complete` reads them all.
        self.filled = np.ones(cap, dtype=bool)
        self.deferred: DeferredVectors | None = None
        self.matrix = np.zeros((cap, 0), dtype=np.float32)
        # The matrix while it sits in memory numpy did not allocate (the store's buffer, or pages
        # that come a row at a time): :meth:`settle` moves it.
        self._lazy: np.ndarray | None = None
        self._spill: Spill | None = None  # the matrix being read into a file (see _load_codes)
        # The file the matrix's rows live in (mapped), when every row does: a snapshot keeps it as is.
        self.matrix_file: Path | None = None
        self._prefix: np.ndarray | None = None  # see prefix_codes
        self._nbytes: tuple | None = None  # (ids of the arrays counted, their bytes): see nbytes
        self._prefix_n = 0
        self.codes = np.zeros((0, cap), dtype=np.uint64)  # (words, rows): one word is contiguous
        # The same by row (rows, words): the second pass reads a few thousand scattered rows'
        # codes, a cache line or two each instead of one per word.
        self.row_codes = np.zeros((cap, 0), dtype=np.uint64)
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
        # BM25 postings by term hash (capsule.terms): ``_main`` sorted by hash, one entry per
        # (term, row) with its count; ``_pending`` rows added since, one entry per token, unsorted
        # (scanned until there are enough of them to be worth sorting into ``_main``).
        self._main = (np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_n = 0
        self._scans = 0  # term look-ups left before a large pending part is sorted
        self._arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._changed()

    def _changed(self) -> None:
        """Forget what was derived from the rows for searches (they changed)."""
        self._stats: tuple[int, float] | None = None
        self.scores = TermScores()
        # What a search derives from every row's signals (capsule.search), kept until they change.
        self.derived: dict[str, np.ndarray] = {}

    # ---- snapshots -------------------------------------------------------

    _ARRAYS = ("alive", "has_vec", "matrix", "length", "occurred", "created", "helpful", "unhelpful", "outcome",
               "key", "session", "author")

    def export(self) -> dict:
        """Everything the index holds, trimmed to its rows (for :mod:`capsule.snapshot`)."""
        self.complete()
        self._merge()
        # The matrix and the codes by row as they are (mapped, perhaps): the snapshot writes their
        # first n rows a block at a time, or keeps the matrix's file (see matrix_file).
        arrays = {name: getattr(self, name)[: self.n] for name in self._ARRAYS if name != "matrix"}
        arrays["matrix"] = self.matrix
        arrays["row_codes"] = self.row_codes
        arrays["codes"] = np.ascontiguousarray(self.codes[:, : self.n])
        return {
            "arrays": arrays, "n": self.n, "dead": self.dead, "dim": self.dim, "words": self.words,
            "version": self.version, "bytes": self._bytes, "records": self.records.packed(), "row_of": self.row_of,
            "sessions": self.sessions, "authors": self.authors, "postings": self._main,
        }

    def restore(self, state: dict) -> None:
        """Become the index :meth:`export` described."""
        self._clear()
        for name, values in state["arrays"].items():
            setattr(self, name, values)
        if self.matrix.ndim != 2 or self.codes.ndim != 2:
            raise ValueError("a snapshot's matrix and codes are two-dimensional")
        self.n, self.dead, self.dim, self.words = state["n"], state["dead"], state["dim"], state["words"]
        self.version, self._bytes = state["version"], state["bytes"]
        self.records = Records(state["records"], self.records.fetch)
        self.filled = np.ones(self.n, dtype=bool)
        if "row_codes" not in state["arrays"]:
            self.row_codes = np.ascontiguousarray(self.codes.T)
        self.matrix_file = state.get("matrix_file")
        self._changed()
        self.row_of = state["row_of"]
        self.sessions, self.authors = state["sessions"], state["authors"]
        # Plain arrays over the mapped postings: a memmap's every slice is a memmap object
        # (tens of µs each), and a search slices them once per term.
        self._main = tuple(np.asarray(a) for a in state["postings"])

    # ---- size ------------------------------------------------------------

    @property
    def active(self) -> int:
        return self.n - self.dead

    def nbytes(self) -> int:
        """About how much RAM the index holds (kept as rows are added, not recounted); rows in
        a mapped file are the OS's cache, not this process's."""
        arrays = (self.matrix, self.codes, self.row_codes, self._prefix, self.length, self.occurred, self.created,
                  self.helpful, self.unhelpful, self.outcome)
        # Counted again only when an array was replaced: the cache asks every index on every
        # search, and a global search reads a hundred of them.
        matrix = self.matrix
        stamp = (self.version, self.n, len(self.alive), id(matrix), id(getattr(matrix, "tail", None)),
                 id(self.codes), id(self.row_codes), id(self._prefix))
        if self._nbytes is None or self._nbytes[0] != stamp:
            self._nbytes = (stamp, sum(resident_bytes(a) for a in arrays if a is not None))
        return self._nbytes[1] + self._bytes + self.scores.bytes

    # ---- keeping current -----------------------------------------------------

    @staticmethod
    def _id_of(names: dict[str, int], name: object) -> int:
        if not isinstance(name, str) or not name:
            return -1
        return names.setdefault(name, len(names))

    def apply(self, changes: ChangeSet) -> None:
        """Bring the index to ``changes.version``. The index takes over the records given."""
        self._shape = None
        self._changed()
        if changes.reset:
            self._clear()
        if changes.columns is not None:
            self._load_columns(changes.columns)
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
        if not self.records.loaded(row) or not self.filled[row]:
            return False  # only its id is held: re-add the row rather than read the old one
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
            self.row_codes = np.zeros((len(self.alive), self.words), dtype=np.uint64)
        if need <= len(self.alive):
            return
        cap = max(need, 2 * len(self.alive))
        for name in ("alive", "has_vec", "key", "session", "author", "length", "occurred",
                     "created", "helpful", "unhelpful", "outcome"):
            setattr(self, name, _grow(getattr(self, name), cap))
        for name in ("matrix", "row_codes"):
            # Rows in a mapped file (a snapshot's, or the matrix being read from the store) stay
            # there: the rows added go to RAM after them. Copying would hold the whole matrix.
            values = getattr(self, name)
            if isinstance(values, SplitRows):
                values = values.grown(cap)
            elif is_mapped(values) or (self._spill is not None and values is self._spill.matrix):
                values = SplitRows(values, cap)
            else:
                values = _grow(values, cap)
            setattr(self, name, values)
        self.matrix_file = None  # rows now live outside the file too
        self.filled = np.append(self.filled, np.ones(cap - len(self.filled), dtype=bool))
        self._lazy = None  # the matrix is a new array now; the old memory goes with it
        self.codes = np.ascontiguousarray(_grow(self.codes.T, cap).T)

    def _load_columns(self, c: IndexColumns) -> None:
        """Fill an empty index from a store's columns: one join of the vectors, no records built."""
        n = len(c.ids)
        if not n:
            return
        if c.deferred is not None:
            packed = Packed(c, n)
            sizes = packed.head["size"].astype(np.int64)
        else:
            sizes = np.fromiter(c.vector_sizes, dtype=np.int64, count=n)
        usable = sizes > 0
        if c.models.count(self.model_id) != n:  # count: a C loop, where all(...) is a Python one
            usable &= np.fromiter((model == self.model_id for model in c.models), dtype=bool, count=n)
        dim = int(sizes[usable].max()) // 4 if usable.any() else 0
        usable &= sizes == 4 * dim  # vectors of another size than the largest are left out, as in _append
        self.n = n
        self.dim, self.words = dim, (dim + 63) // 64
        self.has_vec = usable
        if c.deferred is not None:
            self._load_codes(c.deferred, packed, usable)
            self.key = packed.head["key"].copy()
            self.occurred = packed.head["occurred"].copy()
            self.created = packed.head["created"].copy()
        else:
            self._load_vectors(c, sizes, usable)
            self.key = np.fromiter(c.keys, dtype=np.int64, count=n)
            self.occurred = np.fromiter(c.occurred, dtype=np.float64, count=n)
            self.created = np.fromiter(c.created, dtype=np.float64, count=n)
        self.alive = np.ones(n, dtype=bool)
        self.helpful = np.fromiter(c.helpful, dtype=np.float64, count=n)
        self.unhelpful = np.fromiter(c.unhelpful, dtype=np.float64, count=n)
        self.outcome = np.zeros(n, dtype=np.float64)
        self.session = np.full(n, -1, dtype=np.int64)
        self.author = np.full(n, -1, dtype=np.int64)
        for row, meta in enumerate(c.metas):
            if meta:
                self.outcome[row] = OUTCOME.get(meta.get("outcome_status") or "unknown", 0.0)
                self.session[row] = self._id_of(self.sessions, meta.get("session"))
                self.author[row] = self._id_of(self.authors, meta.get("author"))
        self.row_of = dict(zip(c.ids, range(n)))
        self.records.extend(c.ids)
        lengths = np.fromiter(map(len, c.terms), dtype=np.int64, count=n) // 8
        self.length = lengths.astype(np.float64)
        flat = np.frombuffer(b"".join(c.terms), dtype="<i8").astype(np.int64, copy=False)
        self._add_pending(flat, np.repeat(np.arange(n, dtype=np.int32), lengths))
        self._scans = 32  # the first search scans; sorting waits until the index is searched again
        self._bytes += 12 * flat.size + 200 * n
        if n <= self.eager_records and self.fetch is not None:
            self.records.load_all()

    def _load_vectors(self, c: IndexColumns, sizes: np.ndarray, usable: np.ndarray) -> None:
        n, dim = len(sizes), self.dim
        self.filled = np.ones(n, dtype=bool)
        everything = np.frombuffer(c.vectors, dtype="<f4")
        if dim and usable.all() and everything.size == n * dim:
            self.matrix = self._lazy = everything.reshape(n, dim)  # the common case: no copy at all
        else:
            self.matrix = np.zeros((n, dim), dtype=np.float32)
            if dim:
                starts = (np.cumsum(sizes) - sizes) // 4
                picks = starts[usable][:, None] + np.arange(dim)
                self.matrix[usable] = everything[picks]
        self.row_codes = sign_codes(self.matrix, self.words) if dim else np.zeros((n, 0), dtype=np.uint64)
        self.codes = np.ascontiguousarray(self.row_codes.T)

    def _load_codes(self, deferred: DeferredVectors, packed: Packed, usable: np.ndarray) -> None:
        """Sign bits now, vectors later: the matrix is allocated but not touched (the OS maps
        its pages when they are first written), each row filled when first needed."""
        n = len(usable)
        if n * self.dim * 4 > RESIDENT_MAX and self.spill_path is not None:
            self._spill = Spill(self.spill_path(), n, self.dim)
            self.matrix = self._spill.matrix
        else:
            self.matrix = self._lazy = _lazy_zeros(n, self.dim)
        self.filled = ~usable
        self.deferred = deferred if usable.any() else None
        self.row_codes = packed.codes(usable, self.words)
        self.codes = np.ascontiguousarray(self.row_codes.T)

    # ---- deferred vectors ----------------------------------------------------

    def _fill(self, rows: np.ndarray, vectors: dict[str, bytes]) -> None:
        """Put the given vectors into their rows; a row the store no longer has a vector for
        (purged meanwhile) is searched without one until its removal is read."""
        size = 4 * self.dim
        # Deferred rows are all rows loaded at once, before any added: in the spill file if any.
        target = self.matrix if self._spill is None else self._spill.matrix
        for row in rows.tolist():
            blob = vectors.get(self.records.id_at(row))
            if blob is not None and len(blob) == size:
                target[row] = np.frombuffer(blob, dtype="<f4")
            else:
                self.has_vec[row] = False
            self.filled[row] = True

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of ``rows`` (rows with one), read from the store first where deferred."""
        self._filled(rows)
        return read_rows(self.matrix, rows)

    def dots(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """``einsum("ij,j->i", self.vectors(rows), query)``, without a copy of the vectors."""
        self._filled(rows)
        return row_dots(self.matrix, rows, query)

    def _filled(self, rows: np.ndarray) -> None:
        if self.deferred is not None:
            missing = rows[~self.filled[rows]]
            if missing.size:
                ids = [self.records.id_at(row) for row in missing.tolist()]
                self._fill(missing, self.deferred.some([i for i in ids if i is not None], self.model_id))

    def complete(self) -> None:
        """Read every deferred vector, a chunk at a time; safe beside searches (each chunk is
        placed under :attr:`lock`, the store read outside it)."""
        deferred = self.deferred
        if deferred is None:
            return
        for chunk in deferred.chunks(self.model_id):
            with self.lock:
                if self.deferred is not deferred:
                    return  # reloaded or compacted away meanwhile
                rows = [self.row_of.get(memory_id, -1) for memory_id, _ in chunk]
                at = np.asarray(rows, dtype=np.int64)
                wanted = (at >= 0)
                wanted[wanted] = ~self.filled[at[wanted]]
                if wanted.any():
                    self._fill(at[wanted], {memory_id: blob for (memory_id, blob), w in zip(chunk, wanted) if w})
        with self.lock:
            if self.deferred is deferred:
                missing = np.flatnonzero(~self.filled[: self.n])
                if missing.size:  # forgotten since the load: still in this index until that is read
                    self.vectors(missing)
                self.filled[: self.n] = True
                self.deferred = None
                self._seal()

    def adopt_files(self, matrix: np.ndarray, row_codes: np.ndarray, matrix_file) -> None:
        """Read the matrix and the codes by row from the mapped files a snapshot just wrote of
        them (their first ``n`` rows, unchanged since: the caller holds :attr:`lock`), instead
        of RAM: every process that loads the snapshot then shares the same pages."""
        if len(matrix) != self.n or len(row_codes) != self.n or self._spill is not None:
            return
        capacity = len(self.alive)
        for name, mapped in (("matrix", matrix), ("row_codes", row_codes)):
            if isinstance(getattr(self, name), SplitRows):
                continue  # rows outside the files already; they stay as they are
            setattr(self, name, mapped if capacity == self.n else SplitRows(mapped, capacity))
        self._lazy = None
        self.matrix_file = matrix_file if self.matrix is matrix else None

    def _seal(self) -> None:
        """The spill file is complete: map it read-only (its pages leave this process)."""
        spill = self._spill
        if spill is None:
            return
        sealed = spill.seal()
        if isinstance(self.matrix, SplitRows):
            self.matrix.base = sealed
        else:
            self.matrix = sealed
            self.matrix_file = spill.path
        self._spill = None
        spill.close()

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
        self.session[rows] = [self._id_of(self.sessions, _facet(r, "session")) for r in records]
        self.author[rows] = [self._id_of(self.authors, _facet(r, "author")) for r in records]
        self._add_postings(start, [terms.record_hashes(r) for r in records])
        self._bytes += sum(2 * len(r.content) + 300 for r in records)
        self.n = start + len(records)
        if vectors:
            block = np.stack(vectors).astype(np.float32, copy=False)
            at = np.asarray(vec_rows)
            self.matrix[at] = block
            codes = sign_codes(block, self.words)
            self.codes[:, at] = codes.T
            self.row_codes[at] = codes
            self.has_vec[at] = True

    def _add_postings(self, start: int, documents: list[np.ndarray]) -> None:
        """The term hashes of new rows, kept unsorted until there are enough to sort."""
        lengths = np.fromiter(map(len, documents), dtype=np.int64, count=len(documents))
        self.length[start:start + len(documents)] = lengths
        if not lengths.sum():
            return
        flat = np.concatenate(documents)
        self._add_pending(flat, np.repeat(np.arange(start, start + len(documents), dtype=np.int32), lengths))
        self._bytes += 12 * flat.size

    def _add_pending(self, flat: np.ndarray, rows: np.ndarray) -> None:
        self._pending.append((flat, rows))
        self._pending_n += flat.size
        self._arrays.clear()
        if len(self._pending) > 16:  # many small writes: one part to scan, not many
            self._pending = [(np.concatenate([h for h, _ in self._pending]),
                              np.concatenate([r for _, r in self._pending]))]

    def _merge(self) -> None:
        """Sort the pending postings into the main ones: one entry per (term, row) with its count."""
        if not self._pending:
            return
        self._main = _merged(self._main, self._pending)
        self._pending, self._pending_n = [], 0
        self._arrays.clear()

    def merge_postings(self) -> None:
        """:meth:`_merge` with the sorting done outside :attr:`lock` (for a background thread):
        its result is kept only if no row was added meanwhile."""
        with self.lock:
            main, pending = self._main, list(self._pending)
        if not pending:
            return
        merged = _merged(main, pending)
        with self.lock:
            if self._main is main and len(self._pending) == len(pending) and all(
                    a is b for a, b in zip(self._pending, pending)):
                self._main = merged
                self._pending, self._pending_n = [], 0
                self._arrays.clear()

    def settle(self) -> None:
        """Do now, beside searches, the work a later search would otherwise do on its path:
        read the deferred vectors, move the matrix to memory of its own (in huge pages where
        the OS has them), sort the postings."""
        self.complete()
        with self.lock:
            if self.matrix is not self._lazy:
                self._lazy = None  # replaced meanwhile (rows added, or dead ones dropped)
            lazy = self._lazy if self.deferred is None else None
        if lazy is not None:
            # A search reads about a thousand scattered rows: in huge pages that takes a third
            # less time. Copied outside the lock; kept if no row was written meanwhile (every
            # row is filled now, so only a new row could, and that replaces the matrix).
            housed = np.array(lazy)
            with self.lock:
                if self.matrix is lazy and self.deferred is None:
                    self.matrix = housed
                self._lazy = None
        self.merge_postings()

    def _set_meta(self, row: int, record: MemoryRecord) -> None:
        """Refresh what ranking reads of a row whose text and vector did not change."""
        self.occurred[row] = to_epoch(record.occurred_at)
        self.created[row] = to_epoch(record.created_at)
        self.helpful[row] = record.helpful
        self.unhelpful[row] = record.unhelpful
        self.outcome[row] = OUTCOME.get(record.meta.get("outcome_status") or "unknown", 0.0)
        self.session[row] = self._id_of(self.sessions, _facet(record, "session"))
        self.author[row] = self._id_of(self.authors, _facet(record, "author"))

    def _compact(self) -> None:
        """Drop the dead rows: every array keeps its live rows and the postings are renumbered."""
        self._merge()
        keep = np.flatnonzero(self.alive[: self.n])
        renumber = np.full(self.n, -1, dtype=np.int64)
        renumber[keep] = np.arange(keep.size)
        for name in ("alive", "has_vec", "filled", "key", "session", "author", "matrix", "length", "occurred",
                     "created", "helpful", "unhelpful", "outcome"):
            setattr(self, name, getattr(self, name)[keep].copy())
        self.codes = np.ascontiguousarray(self.codes[:, keep])
        self.row_codes = self.row_codes[keep]
        self._lazy = None
        self.matrix_file = None
        self._prefix, self._prefix_n = None, 0
        self.records = self.records.keep(keep)
        self.row_of = {memory_id: int(renumber[row]) for memory_id, row in self.row_of.items()}
        main_h, main_r, main_t = self._main
        new_rows = renumber[main_r]
        live = new_rows >= 0
        self._main = (main_h[live], new_rows[live].astype(np.int32), main_t[live])
        self._arrays.clear()
        self._bytes = int(self._bytes * keep.size / max(self.n, 1))
        self.n, self.dead = keep.size, 0
        self._shape = None

    # ---- reading -------------------------------------------------------------

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Exact float32 dot products of every row's vector with ``query`` (0 without one)."""
        return blocked_dot(self.matrix, query, self.n)

    def prefix_codes(self, words: int) -> np.ndarray:
        """(n, words) uint64, C-contiguous: the leading sign-bit words of every row, for a
        first pass that reads only those (capsule.hamming). Rows are only ever appended
        between resets, so the rows added since the last call are the only ones computed."""
        words = min(words, self.words)
        prefix = self._prefix
        if prefix is None or prefix.shape[1] != words or self._prefix_n > self.n:
            prefix, self._prefix_n = np.zeros((0, words), dtype=np.uint64), 0
        if len(prefix) < self.n:
            grown = np.zeros((max(self.n, 2 * len(prefix)) if self._prefix_n else self.n, words), dtype=np.uint64)
            grown[: self._prefix_n] = prefix[: self._prefix_n]
            prefix = grown
        if self._prefix_n < self.n:
            for start in range(self._prefix_n, self.n, 65536):
                stop = min(self.n, start + 65536)
                prefix[start:stop] = self.row_codes[start:stop][:, :words]
            self._prefix_n = self.n
        self._prefix = prefix
        return prefix[: self.n]

    def shape(self) -> "Shape":
        """What the memories look like (lengths, sessions, neighbours), computed once per version."""
        if self._shape is None:
            self._shape = Shape.of(self)
        return self._shape

    def postings_of(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Rows holding ``term`` and how often (dead rows included; the caller masks them).
        Sealed memories' postings are keyed (capsule.crypto): the term's keyed hashes too."""
        plain = self._postings_of_hash(terms.term_hash(term))
        variants = self.term_variants(term) if self.term_variants is not None else ()
        if not variants:
            return plain
        found = [plain, *(self._postings_of_hash(h) for h in variants)]
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])

    def _postings_of_hash(self, h: int) -> tuple[np.ndarray, np.ndarray]:
        cached = self._arrays.get(h)
        if cached is not None:
            return cached
        if self._pending_n > max(65536, self._main[0].size // 8):
            if self._scans > 0:
                self._scans -= 1
            else:
                self._merge()
        main_h, main_r, main_t = self._main
        lo, hi = np.searchsorted(main_h, h, "left"), np.searchsorted(main_h, h, "right")
        rows, tfs = [main_r[lo:hi]], [main_t[lo:hi]]
        for flat, at in self._pending:
            hit = at[flat == h]
            if hit.size:
                found, counts = np.unique(hit, return_counts=True)
                rows.append(found.astype(np.int32, copy=False))
                tfs.append(counts.astype(np.float32))
        cached = (rows[0], tfs[0]) if len(rows) == 1 else (np.concatenate(rows), np.concatenate(tfs))
        self._arrays[h] = cached
        return cached

    def alive_stats(self) -> tuple[int, float]:
        """How many rows are active and their summed keyword length (BM25's n and average
        length when nothing is filtered), computed once per change."""
        if self._stats is None:
            alive = self.alive[: self.n]
            self._stats = (int(alive.sum()), float(self.length[: self.n][alive].sum()))
        return self._stats

    def mask(self, filters: Filters) -> np.ndarray:
        """Rows that are active and pass the filters."""
        mask = self.alive[: self.n].copy()
        if filters.since:  # when it happened (the time it was stored, unless told otherwise)
            mask &= self.occurred[: self.n] >= to_epoch(filters.since)
        if filters.until:
            mask &= self.occurred[: self.n] < to_epoch(filters.until)
        if (filters.component or filters.category or filters.tags or filters.path_prefix or filters.retention
                or filters.visibility or filters.subjects):
            rows = np.flatnonzero(mask)
            self.records.prefetch(rows)
            for row in rows:
                record = self.records[row]
                if record is None or not _passes(record, filters):
                    mask[row] = False
        return mask


def _facet(record: MemoryRecord, name: str):
    """A meta value an index groups by; a sealed memory's as its keyed tag (capsule.crypto), so
    its session and author names never reach a snapshot."""
    tags = getattr(record, "facet_tags", None)
    if tags is not None:
        return tags.get(name)
    return record.meta.get(name)


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
    if filters.retention and effective_class(record.retention, record.pinned) != filters.retention:
        return False
    if filters.visibility and (record.visibility or "private") not in filters.visibility:
        return False
    if filters.subjects and record.subject not in filters.subjects:
        return False
    return True


class IndexCache:
    """Project indexes of one process, least recently used dropped beyond ``max_bytes``."""

    def __init__(self, max_bytes: int = 1 << 30,
                 fetch: Callable[[str, str, list[str]], dict[str, MemoryRecord]] | None = None) -> None:
        self.max_bytes = max_bytes
        self.fetch = fetch
        self._lock = threading.Lock()
        self._indexes: OrderedDict[tuple[str, str, str | None], ProjectIndex] = OrderedDict()

    def get(self, tenant: str, project: str, model_id: str | None) -> ProjectIndex:
        key = (tenant, project, model_id)
        with self._lock:
            index = self._indexes.get(key)
            if index is None:
                index = self._indexes[key] = ProjectIndex(tenant, project, model_id, self.fetch)
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


def store_fetcher(store) -> Callable[[str, str, list[str]], dict[str, MemoryRecord]]:
    """How an index fetches the records of rows it loaded as columns: by id (``get_many``),
    without their vectors (the index holds those)."""

    def fetch(tenant: str, project: str, ids: list[str]) -> dict[str, MemoryRecord]:
        found: dict[str, MemoryRecord] = {}
        for start in range(0, len(ids), 5000):
            found.update((r.id, r) for r in store.get_many(tenant, ids[start:start + 5000]))
        return found

    return fetch
