"""The index's records by row: whole, packed (from a snapshot) or only an id (fetched later)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any

import numpy as np

from ..core.clock import from_epoch, to_epoch
from ..core.records import MemoryRecord

# Fetch whole records by id (ids -> found), see :func:`capsule.search.index.store_fetcher`.
Fetch = Callable[[list[str]], dict[str, MemoryRecord]]


# Every field but the embedding (the matrix holds it), so a field added later is kept too.
_FIELDS = tuple(f.name for f in fields(MemoryRecord) if f.name != "embedding")
_TIMES = frozenset(f.name for f in fields(MemoryRecord) if f.name.endswith("_at"))


def pack(record: MemoryRecord) -> tuple:
    """A record as plain values (times as epoch seconds): quick to pickle and to load."""
    return tuple(
        None if (v := getattr(record, name)) is None else to_epoch(v) if name in _TIMES else v for name in _FIELDS
    )


def unpack(values: tuple) -> MemoryRecord:
    fields: dict[str, Any] = {name: (from_epoch(v) if name in _TIMES else v) for name, v in zip(_FIELDS, values)}
    return MemoryRecord(**fields)


class Records:
    """The index's records by row. A row loaded from a snapshot is built on first use; a row
    loaded as columns is only its id until a search returns it (then fetched from the store)."""

    # Rows read one at a time before the rest are fetched at once: a ranking aid that reads
    # the content of every candidate should cost one read, not one per row.
    SINGLE_FETCHES = 64

    def __init__(self, items: list | None = None, fetch: Fetch | None = None, *, held: int | None = None) -> None:
        self._items: list[MemoryRecord | tuple | str | None] = list(items or [])
        self.fetch = fetch
        self._singles = 0
        # About how many rows are held whole, not as ids (what the process's budget of records
        # in RAM counts, see capsule.service.indexes): given where known, else counted once.
        self.held = held if held is not None else sum(type(item) is not str for item in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def append(self, record: MemoryRecord | str | None) -> None:
        self._items.append(record)

    def extend(self, items: Sequence[MemoryRecord | str | None]) -> None:
        self._items.extend(items)

    def __setitem__(self, row: int, record: MemoryRecord | None) -> None:
        self._items[row] = record

    def __getitem__(self, row: int) -> MemoryRecord | None:
        item = self._items[row]
        if type(item) is MemoryRecord:
            return item
        if isinstance(item, str):
            self._singles += 1
            if self._singles > self.SINGLE_FETCHES:
                self.load_all()
            else:
                self.prefetch([row])
            item = self._items[row]
        if isinstance(item, tuple):
            item = self._items[row] = unpack(item)
        return item

    def loaded(self, row: int) -> bool:
        return not isinstance(self._items[row], str)

    def prefetch(self, rows: Sequence[int] | np.ndarray) -> None:
        """Fetch the given rows' records from the store in one read, where they are only ids."""
        wanted = self._wanted(rows)
        if wanted:
            self._take(wanted, self._fetcher()(list(wanted)))

    def _wanted(self, rows: Sequence[int] | np.ndarray) -> dict[str, int]:
        """The rows among ``rows`` held only as ids, by id."""
        items = self._items
        return {items[row]: row for row in rows if type(items[row]) is str}

    def _fetcher(self) -> Fetch:
        if self.fetch is None:
            raise RuntimeError("an index loaded as columns needs a way to fetch its records")
        return self.fetch

    def _take(self, wanted: dict[str, int], found: dict[str, MemoryRecord]) -> None:
        for memory_id, row in wanted.items():
            record = found.get(memory_id)
            if record is not None:
                record.embedding = None  # the matrix holds the vector
            self._items[row] = record  # None: purged meanwhile, so no longer returned

    def load_all(self) -> None:
        self.prefetch([row for row, item in enumerate(self._items) if isinstance(item, str)])
        self.held = len(self._items)

    def id_at(self, row: int) -> str | None:
        """The id of the memory a row holds, whatever form it is held in (None: purged)."""
        item = self._items[row]
        return item if item is None or isinstance(item, str) else item[0] if isinstance(item, tuple) else item.id

    def ids(self) -> list[str | None]:
        return [self.id_at(row) for row in range(len(self._items))]

    def packed(self) -> list[tuple | str | None]:
        # A sealed memory (capsule.crypto) only as its id: its text is fetched (and opened) on use.
        return [
            item
            if item is None or isinstance(item, (tuple, str))
            else item.id
            if getattr(item, "sealed", "")
            else pack(item)
            for item in self._items
        ]

    def keep(self, rows: np.ndarray) -> Records:
        return Records([self._items[row] for row in rows.tolist()], self.fetch)


def prefetch_together(parts: Sequence[tuple[Records, Sequence[int] | np.ndarray]]) -> None:
    """:meth:`Records.prefetch` of the given rows of several indexes of one tenant, in one
    store read: an index fetches its tenant's memories by id (:func:`capsule.search.index.store_fetcher`),
    and ids are unique in a tenant, so one fetch serves them all. A global search's hits are
    spread over many indexes: at 1M memories over 100 projects, a read for each cost 5-7 ms a search."""
    asked = [(records, wanted) for records, rows in parts if (wanted := records._wanted(rows))]
    if asked:
        found = asked[0][0]._fetcher()([memory_id for _, wanted in asked for memory_id in wanted])
        for records, wanted in asked:
            records._take(wanted, found)
