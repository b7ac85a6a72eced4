"""A project index as plain arrays and back: the index's side of :mod:`capsule.search.snapshot`.

The snapshot module writes what :meth:`IndexSnapshot.export` gives to local files and hands
back what :meth:`IndexSnapshot.restore` becomes, mapped; after a save, an index may read its
matrix and codes from the very files just written (:meth:`IndexSnapshot.adopt_files`), so that
every process that loads the snapshot shares the same pages. Kept here, beside the parts whose
state it names, so that one list says what a snapshot holds.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .indexpostings import IndexPostings
from .indexrecords import Records
from .indexvectors import IndexVectors
from .matrix import SplitRows

# The per-row arrays a snapshot holds, beside the codes (which it holds by word and by row).
ARRAYS = (
    "alive",
    "has_vec",
    "matrix",
    "length",
    "occurred",
    "created",
    "helpful",
    "unhelpful",
    "outcome",
    "key",
    "session",
    "author",
)


class IndexSnapshot(IndexVectors, IndexPostings):
    """What a snapshot holds of an index, and the index it describes."""

    _clear: Callable[[], None]  # ProjectIndex._clear: every part empty

    def export(self) -> dict:
        """Everything the index holds, trimmed to its rows (for :mod:`capsule.search.snapshot`)."""
        self.complete()
        self._merge()
        # The matrix and the codes by row as they are (mapped, perhaps): the snapshot writes their
        # first n rows a block at a time, or keeps the matrix's file (see matrix_file).
        arrays = {name: getattr(self, name)[: self.n] for name in ARRAYS if name != "matrix"}
        arrays["matrix"] = self.matrix
        arrays["row_codes"] = self.row_codes
        arrays["codes"] = np.ascontiguousarray(self.codes[:, : self.n])
        return {
            "arrays": arrays,
            "n": self.n,
            "dead": self.dead,
            "dim": self.dim,
            "words": self.words,
            "version": self.version,
            "bytes": self._bytes,
            "records": self.records.packed(),
            "row_of": self.row_of,
            "sessions": self.sessions,
            "authors": self.authors,
            "postings": self._main,
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
        self.records = Records(state["records"], self.records.fetch, held=state.get("held"))
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
