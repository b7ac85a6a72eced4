"""The vectors of a project index: one float32 matrix and the sign bits of its rows.

A search's first stage reads only the sign codes (``codes`` by word, ``row_codes`` by row, the
leading words in :meth:`IndexVectors.prefix_codes`); its exact re-score reads the vectors of a
few hundred candidates (:meth:`IndexVectors.dots`). Rows loaded with sign bits only (a large
project, :mod:`.indexload`) have their vectors read from the store when first needed, and all
of them by :meth:`IndexVectors.complete`; a matrix too large for RAM goes to a file
(:class:`~capsule.search.matrix.Spill`), then is mapped read-only. Kept apart from the other rows
because this is the state with memory that is not numpy's (mapped files, lazy pages).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.records import DeferredVectors
from . import quantized
from .indexrows import IndexRows, grow
from .matrix import Spill, SplitRows, blocked_dot, is_mapped, read_rows, row_dots
from .quantized import Quantized, build
from .signbits import sign_codes


class IndexVectors(IndexRows):
    """The matrix, its sign codes and the reading of deferred vectors."""

    filled: np.ndarray
    deferred: DeferredVectors | None
    matrix: np.ndarray
    matrix_file: Path | None
    codes: np.ndarray
    row_codes: np.ndarray

    def _clear_vectors(self, cap: int) -> None:
        self.dim = 0
        self.words = 0
        # False: the row's vector is not in the matrix yet (an index loaded with sign bits only);
        # :meth:`vectors` reads such rows from ``deferred`` and :meth:`complete` reads them all.
        self.filled = np.ones(cap, dtype=bool)
        self.deferred = None
        self.matrix = np.zeros((cap, 0), dtype=np.float32)
        # The matrix while it sits in memory numpy did not allocate (the store's buffer, or pages
        # that come a row at a time): :meth:`settle` moves it.
        self._lazy: np.ndarray | None = None
        self._spill: Spill | None = None  # the matrix being read into a file (see _load_codes)
        # The file the matrix's rows live in (mapped), when every row does: a snapshot keeps it as is.
        self.matrix_file = None
        self._prefix: np.ndarray | None = None  # see prefix_codes
        self._prefix_n = 0
        self._forget_quant()
        self.codes = np.zeros((0, cap), dtype=np.uint64)  # (words, rows): one word is contiguous
        # The same by row (rows, words): the second pass reads a few thousand scattered rows'
        # codes, a cache line or two each instead of one per word.
        self.row_codes = np.zeros((cap, 0), dtype=np.uint64)

    def _start_matrix(self, dim: int) -> None:
        """The first vectors of an index without any: the matrix and codes take their width."""
        self.dim, self.words = dim, (dim + 63) // 64
        self.matrix = np.zeros((len(self.alive), dim), dtype=np.float32)
        self.codes = np.zeros((self.words, len(self.alive)), dtype=np.uint64)
        self.row_codes = np.zeros((len(self.alive), self.words), dtype=np.uint64)

    def _grow_matrix(self, cap: int) -> None:
        for name in ("matrix", "row_codes"):
            # Rows in a mapped file (a snapshot's, or the matrix being read from the store) stay
            # there: the rows added go to RAM after them. Copying would hold the whole matrix.
            values = getattr(self, name)
            if isinstance(values, SplitRows):
                values = values.grown(cap)
            elif is_mapped(values) or (self._spill is not None and values is self._spill.matrix):
                values = SplitRows(values, cap)
            else:
                values = grow(values, cap)
            setattr(self, name, values)
        self.matrix_file = None  # rows now live outside the file too
        self.filled = np.append(self.filled, np.ones(cap - len(self.filled), dtype=bool))
        self._lazy = None  # the matrix is a new array now; the old memory goes with it
        self.codes = np.ascontiguousarray(grow(self.codes.T, cap).T)

    def _store_vectors(self, at: np.ndarray, block: np.ndarray) -> None:
        """Vectors of new rows ``at``, with their sign codes."""
        self.matrix[at] = block
        codes = sign_codes(block, self.words)
        self.codes[:, at] = codes.T
        self.row_codes[at] = codes
        self.has_vec[at] = True

    def _keep_vectors(self, keep: np.ndarray) -> None:
        """Only the rows ``keep`` of the matrix and codes (dead rows dropped)."""
        self.filled = self.filled[keep].copy()
        self.matrix = self.matrix[keep].copy()
        self.codes = np.ascontiguousarray(self.codes[:, keep])
        self.row_codes = self.row_codes[keep]
        self._lazy = None
        self.matrix_file = None
        self._prefix, self._prefix_n = None, 0
        self._forget_quant()  # rows renumbered

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
                self._unembedded = None  # recounted (IndexPostings.unembedded)
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
                wanted = at >= 0
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

    def _house_matrix(self) -> None:
        """Move a matrix in memory numpy did not allocate to memory of its own (in huge pages
        where the OS has them), once every row is filled."""
        with self.lock:
            if self.matrix is not self._lazy:
                self._lazy = None  # replaced meanwhile (rows added, or dead ones dropped)
            lazy = self._lazy if self.deferred is None else None
        if lazy is None:
            return
        # A search reads about a thousand scattered rows: in huge pages that takes a third
        # less time. Copied outside the lock; kept if no row was written meanwhile (every
        # row is filled now, so only a new row could, and that replaces the matrix).
        housed = np.array(lazy)
        with self.lock:
            if self.matrix is lazy and self.deferred is None:
                self.matrix = housed
            self._lazy = None

    # ---- the int8 copy --------------------------------------------------------

    def _forget_quant(self) -> None:
        # The int8 copy of rows [0, quant.n) (capsule.search.quantized): rows are only appended
        # between resets and compactions, and a row's vector never changes while it lives,
        # so it stays true for those rows until one of those (each forgets it).
        self.quant: Quantized | None = None
        self._quant_epoch = getattr(self, "_quant_epoch", 0) + 1
        self._quant_tried = (0, 0)  # (epoch, rows) of the last attempt

    def wants_quant(self) -> bool:
        """Whether :meth:`quantize` would make a copy: a large index whose vectors are all read,
        without one, or with more than an eighth of its rows added since (a copy is made whole,
        reading every row; rows it does not hold are read exactly meanwhile)."""
        epoch, rows = self._quant_tried
        if epoch == self._quant_epoch and self.n - rows <= self.n // 8:
            return False  # tried at about this size: a failure (a full disk) is not retried per search
        return (
            self.n >= quantized.QUANT_FROM
            and self.dim > 0
            and self.deferred is None
            and (self.quant is None or self.n - self.quant.n > self.n // 8)
        )

    def quantize(self, path: Path | None = None) -> bool:
        """Make the int8 copy of every row, outside :attr:`lock` (a million rows: seconds of
        reading), kept unless the rows were renumbered meanwhile; ``path``: its files' prefix
        (mapped, shared by every process), else RAM. True when a copy was made and kept."""
        with self.lock:
            if not self.wants_quant():
                return False
            matrix, n, epoch = self.matrix, self.n, self._quant_epoch
            self._quant_tried = (epoch, n)
        made = build(matrix, n, path)  # rows [0, n) of this matrix are never written again
        with self.lock:
            if self._quant_epoch != epoch or made is None:
                return False
            self.quant = made
        return True

    # ---- reading -------------------------------------------------------------

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Exact float32 dot products of every row's vector with ``query`` (0 without one)."""
        return blocked_dot(self.matrix, query, self.n)

    def prefix_codes(self, words: int) -> np.ndarray:
        """(n, words) uint64, C-contiguous: the leading sign-bit words of every row, for a
        first pass that reads only those (capsule.search.hamming). Rows are only ever appended
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
