"""A tenant's keyword postings in one table sorted by term, for global search
(:mod:`capsule.search.globalsearch`), kept across changes of its projects.

Sorting every project's postings into one table is the costly part of the first global search
after a write: 23M postings at 1M memories over 100 projects, 2.2-3 s of CPU. So a table outlives
the changes made after it: an index that changed since (or is new) is read from its own
postings instead, and the table's entries for it are skipped, until more than
:data:`STALE_MAX` indexes are read that way and sorting again pays. Either way a term finds the
same rows with the same counts, so a search gives the same scores.

Where the owner runs work beside the searches (:class:`Resorter`, the service's background
thread), that sorting is done there, and searches read the changed indexes on their own
meanwhile; without one it is done on the search's path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .index import ProjectIndex
from .terms import term_hash

STALE_MAX = 16  # indexes read from their own postings before the table is sorted again
SORT_BESIDE_FROM = 1 << 21  # postings from which a tenant's first table is sorted beside the searches

Variants = Callable[[str], list[int]] | None


@dataclass(frozen=True, slots=True)
class PostingsTable:
    """Every posting of some indexes, sorted by term hash: the index it is in (its place when
    the table was built) and its row there. Each term hash is kept once, with where its
    postings start (a term's are ``offsets[j]:offsets[j + 1]``): 23M postings at 1M memories,
    whose hashes one by one took 184 MB."""

    places: dict[tuple, int]  # each index's postings then (ProjectIndex.postings_mark) -> its place
    terms: np.ndarray  # int64, ascending, each once
    offsets: np.ndarray  # int64, len(terms) + 1
    owner: np.ndarray  # int32: the place
    local: np.ndarray  # the row in that index
    counts: np.ndarray

    def named_by_files(self) -> bool:
        """Whether every place is a snapshot's postings file, as they are there: such a table
        means the same in any process that loads those snapshots (capsule.search.tenanttables)."""
        return bool(self.places) and all(mark[0] == "file" for mark in self.places)

    def span(self, term: int) -> tuple[int, int]:
        """Where a term hash's postings are (an empty span where it has none)."""
        at = int(np.searchsorted(self.terms, term))
        if at < self.terms.size and int(self.terms[at]) == term:
            return int(self.offsets[at]), int(self.offsets[at + 1])
        return 0, 0

    @classmethod
    def of(cls, indexes: Sequence[ProjectIndex]) -> PostingsTable:
        """The table of ``indexes`` as they are (the caller holds their locks)."""
        for index in indexes:
            index._merge()  # pending postings sorted in (what the index's next term look-up does)
        return cls.of_parts([(i.postings_mark(), i._main) for i in indexes])

    @classmethod
    def of_parts(cls, parts: Sequence[tuple[tuple[int, int], tuple[np.ndarray, ...]]]) -> PostingsTable:
        """The table of each index's marker and main postings (hash-sorted hashes, rows, counts)."""
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return cls({}, empty, np.zeros(1, dtype=np.int64), empty.astype(np.int32), empty, empty)
        mains = [main for _, main in parts]
        hashes = np.concatenate([m[0] for m in mains])
        order = np.argsort(hashes, kind="stable")
        hashes = hashes[order]
        owner = np.repeat(np.arange(len(mains), dtype=np.int32), [m[0].size for m in mains])
        local = np.concatenate([m[1] for m in mains])
        counts = np.concatenate([m[2] for m in mains])
        first = (
            np.flatnonzero(np.concatenate(([True], hashes[1:] != hashes[:-1])))
            if hashes.size
            else np.zeros(0, dtype=np.int64)
        )
        offsets = np.append(first, hashes.size).astype(np.int64)
        return cls(
            {marker: place for place, (marker, _) in enumerate(parts)},
            hashes[first],
            offsets,
            owner[order],
            local[order],
            counts[order],
        )

    @classmethod
    def beside(cls, indexes: Sequence[ProjectIndex]) -> PostingsTable:
        """:meth:`of` for a thread beside the searches: each index's pending postings sorted in
        outside its lock, its postings taken under it, the sorting done holding none. An index
        that took rows meanwhile is left out (a search reads it on its own)."""
        parts = []
        for index in indexes:
            index.merge_postings()
            with index.lock:
                if not index._pending:
                    parts.append((index.postings_mark(), index._main))
        return cls.of_parts(parts)


@dataclass(frozen=True, slots=True)
class TenantPostings:
    """A table seen from the indexes searched now, rows numbered tenant-wide (``starts``)."""

    table: PostingsTable
    position: np.ndarray  # for each place in the table, the index's position now (-1: skipped)
    stale: tuple[int, ...]  # positions of indexes read from their own postings
    starts: np.ndarray
    skips: bool  # some of the table's entries are of an index changed or gone since

    @classmethod
    def of(
        cls,
        indexes: Sequence[ProjectIndex],
        starts: np.ndarray,
        previous: PostingsTable | None = None,
        resorter: Resorter | None = None,
    ) -> TenantPostings:
        """Over ``previous`` where few indexes changed since it was built (or where ``resorter``
        sorts a new table beside the searches), else over a new table."""
        table, now = previous, None
        if table is not None:
            now = [table.places.get(i.postings_mark()) for i in indexes]
            stale = sum(place is None for place in now)
            if stale == len(indexes) or (stale > STALE_MAX and resorter is None):
                table = None  # of other indexes altogether (another scope), or too old to keep
            elif stale > STALE_MAX:
                resorter.sort(indexes)
        if (
            table is None
            and resorter is not None
            and not (previous and previous.places)
            and (sum(i.postings_count() for i in indexes) >= SORT_BESIDE_FROM)
        ):
            # A large tenant's first table (23M postings at 1M memories: 4.4 s) is sorted beside
            # the searches; until it is ready every index is read from its own postings.
            resorter.sort(indexes)
            table, now = PostingsTable.of_parts([]), [None] * len(indexes)
        if table is None:
            table = PostingsTable.of(indexes)
            now = list(range(len(indexes)))
        position = np.full(len(table.places), -1, dtype=np.int64)
        for at, place in enumerate(now):
            if place is not None:
                position[place] = at
        stale = tuple(at for at, place in enumerate(now) if place is None)
        return cls(table, position, stale, starts, bool((position < 0).any()))

    def rows_of(self, indexes: Sequence[ProjectIndex], term: str, variants: Variants) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the tenant holding ``term`` and how often: under its plain hash and, for
        sealed memories (capsule.crypto), under each keyed hash ``variants`` gives; as
        :meth:`capsule.search.index.ProjectIndex.postings_of` does for one project."""
        t = self.table
        found = []
        for h in (term_hash(term), *(variants(term) if variants is not None else ())):
            lo, hi = t.span(h)
            at, local, counts = self.position[t.owner[lo:hi]], t.local[lo:hi], t.counts[lo:hi]
            if self.skips:
                kept = at >= 0
                at, local, counts = at[kept], local[kept], counts[kept]
            found.append((self.starts[at] + local, counts))
        for at in self.stale:
            rows, counts = indexes[at].postings_of(term)
            found.append((rows.astype(np.int64) + self.starts[at], counts))
        if len(found) == 1:
            return found[0]
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])


class Resorter:
    """Sorts a new table on the owner's thread beside the searches (``submit``), one at a time;
    :meth:`take` gives the newest once, for the next search to build its view on."""

    def __init__(self, submit: Callable[[Callable[[], None]], object]) -> None:
        self._submit = submit
        self._lock = threading.Lock()
        self._sorting = False
        self._sorted: PostingsTable | None = None

    def sort(self, indexes: Sequence[ProjectIndex]) -> None:
        with self._lock:
            if self._sorting:
                return
            self._sorting = True
        chosen = list(indexes)

        def run() -> None:
            try:
                table = PostingsTable.beside(chosen)
                with self._lock:
                    self._sorted = table
            finally:
                with self._lock:
                    self._sorting = False

        self._submit(run)

    def take(self) -> PostingsTable | None:
        with self._lock:
            table, self._sorted = self._sorted, None
        return table
