"""The indexes :class:`~capsule.service.memory_service.MemoryService` searches: warm project indexes kept
for the life of the service and brought up to date from the store's change markers, their
snapshots on disk, the work a full load leaves for after the search (settling), and the
one-search (cold) index of a store that tracks no changes or gives a shortlist."""

from __future__ import annotations

import logging
from contextlib import nullcontext
from functools import partial
from typing import cast

import numpy as np

from ..config import Settings
from ..core.errors import Unavailable
from ..core.records import ChangeSet, Filters, MemoryRecord
from ..embedders.base import Embedder
from ..search.index import EAGER_RECORDS, IndexCache, ProjectIndex, store_fetcher
from ..search.snapshot import Snapshots, gc_paused
from ..store.base import MemoryStore, NearestCandidates
from .background import Background

logger = logging.getLogger("capsule.service.memory_service")


class ServiceIndexes:
    # Given by MemoryService's constructor.
    store: MemoryStore
    embedder: Embedder
    settings: Settings

    def _setup_indexes(self) -> None:
        # Kept for the life of this object: warm project indexes.
        self.indexes = IndexCache(self.settings.index_memory_mb << 20, fetch=store_fetcher(self.store))
        # Looked up once: a runtime Protocol check costs more than a small search's scoring.
        self._has_shortlist = isinstance(self.store, NearestCandidates)
        self._tracks_changes = hasattr(self.store, "changes_since")
        self._snapshots: Snapshots | None | bool = False  # False: not looked up yet (it reads the store)
        # Reads a large index's deferred vectors (and then writes its snapshot) after the search
        # that loaded it has returned.
        self.background = Background("capsule-index")

    @property
    def snapshots(self) -> Snapshots | None:
        """Index snapshots beside an embedded store that has an identity; None otherwise."""
        if self._snapshots is False:
            identity = getattr(self.store, "identity", None)
            if not self.settings.index_snapshot_min or identity is None or not self._tracks_changes:
                self._snapshots = None
            else:
                try:
                    name = identity()
                except Unavailable:  # a database not migrated since snapshots came: just no snapshots
                    name = None
                self._snapshots = name and Snapshots(
                    self.settings.data_dir / "index", name, min_rows=self.settings.index_snapshot_min
                )
        return self._snapshots or None  # type: ignore[return-value]  # never True: False, None or Snapshots

    def settle(self) -> None:
        """Wait until the work scheduled after earlier searches is done (indexes complete)."""
        self.background.wait()

    def _change_markers(self, tenant: str, projects: list[str] | None) -> dict[str, int] | None:
        """Per-project versions, or None when the store cannot track changes."""
        if not self._tracks_changes:
            return None
        return self.store.change_markers(tenant, projects)

    def _indexes(
        self, tenant: str, projects: list[str] | None, markers: dict[str, int] | None, filters: Filters
    ) -> list[ProjectIndex]:
        """Current indexes of the projects searched: warm ones brought up to date, or one cold one."""
        model = self.embedder.model_id
        if markers is None:  # a store without change tracking: one index built for this search
            return [self._cold_index(tenant, self.store.candidates(tenant, projects, filters))]
        projects = sorted(markers)  # one lock order everywhere: no deadlock between searches
        indexes = [self.indexes.get(tenant, project, model) for project in projects]
        # Loading many indexes at once (a global search's first), the cycle collector is held off
        # until all are read: each load's objects would otherwise be walked by the next loads'.
        with gc_paused() if any(index.version == 0 for index in indexes) else nullcontext():
            for project, index in zip(projects, indexes):
                with index.lock:
                    self._bring_up_to_date(tenant, project, index, markers[project])
        searched = {id(index) for index in indexes}
        self.indexes.trim(keep=lambda i: id(i) in searched)
        return indexes

    def _bring_up_to_date(self, tenant: str, project: str, index: ProjectIndex, marker: int) -> None:
        """Load or catch up one warm index to the store's version (its lock held by the caller)."""
        # Changed rows may be sealed under a data key another worker rotated to: the keys are
        # then read afresh, or a search here would miss them by keyword until the cache expired.
        index.term_variants = self._term_variants(tenant, fresh=index.version != marker or index.version == 0)
        if index.version == 0:
            # Whole records only within the process's budget (a full load from the store's
            # columns fetches them for a small project only where it fits, see EAGER_RECORDS).
            room = max(0, self.settings.records_in_ram - self.indexes.records_held())
            index.eager_records = min(EAGER_RECORDS, room)
            if self.snapshots is not None:
                # A large matrix read from the store goes to a file beside the snapshots.
                index.spill_path = index.spill_path or partial(self.snapshots.spill_path, index)
                self.snapshots.load(index, whole_records=lambda rows: rows <= room)
        if index.version != marker or index.version == 0:
            changes = self.store.changes_since(tenant, project, index.version, columns=True)
            index.apply(changes)
            if changes.reset and index.deferred is None:
                if self.snapshots is not None:
                    self.snapshots.save(index)
                # What a full load leaves for later (sorting its postings, moving its
                # matrix) is done beside the next searches; a one-shot process skips it.
                self.background.submit(index.settle)
        if index.deferred is not None and not index.settling:
            # Its vectors are read beside the next searches (again, if an earlier
            # attempt failed), then its snapshot is written.
            index.settling = True
            self.background.submit(partial(self._complete, index))
        elif (
            not index.quantizing
            and index.wants_quant()
            and self.snapshots is not None
            and self.snapshots.quant_path(index) is not None
        ):
            index.quantizing = True
            self.background.submit(partial(self._quantize, index))

    def _complete(self, index: ProjectIndex) -> None:
        """Read an index's deferred vectors, then keep its snapshot (off the request's path)."""
        try:
            index.settle()
        finally:
            index.settling = False
        if self.snapshots is not None:
            with index.lock:
                if index.deferred is None and index.version:
                    self.snapshots.save(index)
        self._quantize(index)

    def _quantize(self, index: ProjectIndex) -> None:
        """Make a large index's int8 copy (capsule.search.quantized) beside its snapshot's matrix,
        shared by every worker that maps it. Only there: a matrix not in that file is in RAM,
        where its rows are read about as fast as the copy's. A failure costs only speed: the
        exact re-score then reads every candidate's vector."""
        try:
            path = self.snapshots.quant_path(index) if self.snapshots is not None else None
            if path is not None:
                index.quantize(path)
        except OSError as exc:
            logger.warning("could not make the int8 copy of the index of %s/%s: %s", index.tenant, index.project, exc)
        finally:
            index.quantizing = False

    def _shortlist(
        self, tenant: str, projects: list[str] | None, filters: Filters, query: str, query_vector: np.ndarray | None
    ) -> list[ProjectIndex] | None:
        """For a scope too large to hold (Atlas Vector Search and ``$text``), an index of the
        store's shortlist. Without a query vector (keyword mode, the embedder down) too: a large
        scope is never read whole for want of a vector."""
        if not self._has_shortlist:
            return None
        shortlist = cast(NearestCandidates, self.store).nearest_candidates(  # _has_shortlist: it is one
            tenant,
            projects,
            filters,
            query=query,
            query_vector=query_vector,
            model=self.embedder.model_id,
        )
        if shortlist is None:
            return None
        index = self._cold_index(tenant, shortlist)
        # Which half of the shortlist did not answer (capsule.store.mongo_candidates.Shortlist):
        # the answer says so instead of failing the search.
        index.degraded = getattr(shortlist, "degraded", "")
        # BM25 of the shortlist by its terms' rarity in the index it came from (capsule.search.hybrid).
        index.keyword_stats = getattr(shortlist, "keyword_stats", None)
        return [index]

    def _cold_index(self, tenant: str, records: list[MemoryRecord]) -> ProjectIndex:
        """An index built for one search from the given records."""
        index = ProjectIndex(tenant, "", self.embedder.model_id)
        index.term_variants = self._term_variants(tenant)
        index.apply(ChangeSet(version=0, changed=records, reset=True))
        return index

    def _term_variants(self, tenant: str, *, fresh: bool = False):
        """A query term's keyed hashes for the tenant's sealed memories (capsule.crypto), or None."""
        variants = getattr(self.store, "term_variants", None)
        return None if variants is None else variants(tenant, fresh=fresh)
