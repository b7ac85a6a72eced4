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

The index is one object, :class:`ProjectIndex`, built from parts that share its row arrays
(each a class over :class:`~capsule.search.indexrows.IndexRows`, so a search reads every array as a
plain attribute): :mod:`.indexrows` (the per-row signals and their growth), :mod:`.indexvectors`
(the matrix, its sign codes, deferred vectors), :mod:`.indexpostings` (BM25 postings and
statistics), :mod:`.indexload` (a whole project from a store's columns), :mod:`.indexchanges`
(a :class:`~capsule.core.records.ChangeSet` applied, dead rows compacted), :mod:`.indexsnapshot` (to
and from :mod:`capsule.search.snapshot`), :mod:`.indexfilters` (a search's filters) and
:mod:`.indexshape` (:class:`Shape`). This module puts them together and keeps the indexes of
one process (:class:`IndexCache`).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from ..core.records import KeywordStats, MemoryRecord
from .indexchanges import IndexChanges
from .indexfilters import IndexFilters
from .indexload import EAGER_RECORDS
from .indexrecords import Fetch, Records, pack, unpack
from .indexshape import Shape
from .indexsnapshot import IndexSnapshot
from .matrix import resident_bytes
from .postings import TermScores
from .signbits import PACKED, Packed, pack_row, sign_codes, stable_key

# What other modules import from here: the index and its cache, and (re-exported, as stores
# and tests import them from here) sign bits, packed rows and records.
__all__ = [
    "EAGER_RECORDS",
    "Fetch",
    "IndexCache",
    "PACKED",
    "Packed",
    "ProjectIndex",
    "Records",
    "Shape",
    "TermScores",
    "pack",
    "pack_row",
    "sign_codes",
    "stable_key",
    "store_fetcher",
    "unpack",
]


_SERIALS = itertools.count(1)


class ProjectIndex(IndexChanges, IndexSnapshot, IndexFilters):
    """Every active memory of one project, ready to search. Guard with :attr:`lock`."""

    def __init__(
        self,
        tenant: str,
        project: str,
        model_id: str | None,
        fetch: Callable[[str, str, list[str]], dict[str, MemoryRecord]] | None = None,
        *,
        eager_records: int = EAGER_RECORDS,
    ) -> None:
        self.tenant, self.project, self.model_id = tenant, project, model_id
        # Never reused, unlike id(): what a cache of many indexes (capsule.search.globalsearch) knows it by.
        self.serial = next(_SERIALS)
        self.changes = 0  # how often its rows changed (IndexRows._changed): with serial, a version of it
        self.fetch = fetch
        self.eager_records = eager_records
        self.lock = threading.RLock()
        self.settling = False  # a task reading its deferred vectors is scheduled (see MemoryService)
        self.quantizing = False  # a task making its int8 copy is scheduled (see MemoryService)
        self.version = 0
        # Where a large matrix read from the store is written instead of RAM (capsule.search.matrix);
        # None: held in RAM. Set by the owner (MemoryService names files beside its snapshots).
        self.spill_path: Callable[[], Path] | None = None
        # A query term's keyed hashes, for sealed memories (set by the owner; None: none sealed).
        self.term_variants: Callable[[str], list[int]] | None = None
        # A hosted shortlist's: which half did not answer ("" when both did) and its keyword
        # statistics from the index it came from (capsule.service.indexes sets both).
        self.degraded = ""
        self.keyword_stats: KeywordStats | None = None
        self._clear()

    def _clear(self) -> None:
        """Every part empty, with room for a few rows."""
        cap = 16
        self._clear_rows(cap)
        self._clear_vectors(cap)
        self._clear_postings()
        self._nbytes: tuple | None = None  # (ids of the arrays counted, their bytes): see nbytes
        self._changed()

    def nbytes(self) -> int:
        """About how much RAM the index holds (kept as rows are added, not recounted); rows in
        a mapped file are the OS's cache, not this process's."""
        quant = self.quant
        arrays = (
            self.matrix,
            self.codes,
            self.row_codes,
            self._prefix,
            self.length,
            self.occurred,
            self.created,
            self.helpful,
            self.unhelpful,
            self.outcome,
            *((quant.codes, quant.meta) if quant else ()),
        )
        # Counted again only when an array was replaced: the cache asks every index on every
        # search, and a global search reads a hundred of them.
        matrix = self.matrix
        stamp = (
            self.version,
            self.n,
            len(self.alive),
            id(matrix),
            id(getattr(matrix, "tail", None)),
            id(self.codes),
            id(self.row_codes),
            id(self._prefix),
            id(quant),
        )
        if self._nbytes is None or self._nbytes[0] != stamp:
            self._nbytes = (stamp, sum(resident_bytes(a) for a in arrays if a is not None))
        return self._nbytes[1] + self._bytes + self.scores.bytes

    def settle(self) -> None:
        """Do now, beside searches, the work a later search would otherwise do on its path:
        read the deferred vectors, move the matrix to memory of its own (in huge pages where
        the OS has them), sort the postings."""
        self.complete()
        self._house_matrix()
        self.merge_postings()

    def shape(self) -> Shape:
        """What the memories look like (lengths, sessions, neighbours), computed once per version."""
        if self._shape is None:
            self._shape = Shape.of(self)
        return self._shape


class IndexCache:
    """Project indexes of one process, least recently used dropped beyond ``max_bytes``."""

    def __init__(
        self, max_bytes: int = 1 << 30, fetch: Callable[[str, str, list[str]], dict[str, MemoryRecord]] | None = None
    ) -> None:
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
        dropped: list[tuple[str, str]] = []
        with self._lock:
            if all(keep(index) for index in self._indexes.values()):
                return dropped  # nothing may go (a tenant's global search keeps every index it read)
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

    def records_held(self) -> int:
        """About how many rows the cached indexes hold as whole records (not ids)."""
        with self._lock:
            return sum(index.records.held for index in self._indexes.values())

    def __len__(self) -> int:
        return len(self._indexes)


def store_fetcher(store) -> Callable[[str, str, list[str]], dict[str, MemoryRecord]]:
    """How an index fetches the records of rows it loaded as columns: by id (``get_many``),
    without their vectors (the index holds those)."""

    def fetch(tenant: str, project: str, ids: list[str]) -> dict[str, MemoryRecord]:
        found: dict[str, MemoryRecord] = {}
        for start in range(0, len(ids), 5000):
            found.update((r.id, r) for r in store.get_many(tenant, ids[start : start + 5000]))
        return found

    return fetch
