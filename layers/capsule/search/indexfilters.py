"""Which rows of a project index pass a search's filters (:class:`~capsule.core.records.Filters`).

Times are compared on the index's arrays; every other filter reads the rows' records, fetched
by id first where the index holds only ids (:class:`~capsule.search.indexrecords.Records`). Kept apart
as the one place that says what each filter means for a row.
"""

from __future__ import annotations

import numpy as np

from ..core.clock import to_epoch
from ..core.records import Filters, MemoryRecord
from ..core.retention import effective_class
from .indexrows import IndexRows

_NONE = Filters()


class IndexFilters(IndexRows):
    """The rows a search may return."""

    def mask(self, filters: Filters) -> np.ndarray:
        """Rows that are active and pass the filters (read-only where nothing is filtered: the
        active rows, kept until the rows change, as a global search asks every index each time)."""
        if filters == _NONE:
            found = self.derived.get("alive")
            if found is None:
                found = self.derived["alive"] = self.alive[: self.n].copy()
                found.flags.writeable = False
            return found
        mask = self.alive[: self.n].copy()
        if filters.since:  # when it happened (the time it was stored, unless told otherwise)
            mask &= self.occurred[: self.n] >= to_epoch(filters.since)
        if filters.until:
            mask &= self.occurred[: self.n] < to_epoch(filters.until)
        if (
            filters.component
            or filters.category
            or filters.tags
            or filters.path_prefix
            or filters.retention
            or filters.visibility
            or filters.subjects
        ):
            rows = np.flatnonzero(mask)
            self.records.prefetch(rows)
            for row in rows:
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
    if filters.retention and effective_class(record.retention, record.pinned) != filters.retention:
        return False
    if filters.visibility and (record.visibility or "private") not in filters.visibility:
        return False
    if filters.subjects and record.subject not in filters.subjects:
        return False
    return True
