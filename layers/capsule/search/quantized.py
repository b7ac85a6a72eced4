"""An int8 copy of a large index's vectors with a bound on each row's error, so that the exact
re-score reads float32 vectors only for the candidates that can still be among the k best.

At a million 1024-d rows the float32 matrix (4 GB) stays in a file and a search reads each
candidate's row with a system call (:func:`capsule.search.matrix.read_rows`): a thousand candidates
cost about 5 ms. Their int8 rows (1 KB each, a quarter of the bytes) give each dot product to
within a bound: with ``x = s * c + e`` (``c`` the int8 codes, ``s`` the row's scale),
``|x.q - s * (c.q)| <= |e| |q|`` by Cauchy-Schwarz. The bound is widened by a thousandth of
``|x| |q|``, well above what float32 rounding of either sum can move it (about 6e-5 of that
for 1024 terms), so the float32 dot the exact path computes lies within it too.

:func:`capsule.search.hybrid._rank_rows` then needs the exact dot only of a row whose best possible
score reaches the k-th best sure score; every score it returns is the exact float32 one.
"""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .matrix import new_npy

# Indexes with at least this many rows get a copy (beside their snapshot): one project's
# candidates are read about as fast either way below 100,000, but a global search over many
# small projects reads a thousand rows of a hundred matrices, and with the copies a few dozen.
QUANT_FROM = 1_000
SLACK = 1e-3  # of |x| |q|: room for float32 rounding of the exact dot and of the estimate
BLOCK = 4096  # rows quantized at a time


def quantize(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes of float32 rows and each row's (scale, error norm, norm), the last two
    rounded up: ``row = scale * codes + error``."""
    block = np.asarray(block, dtype=np.float32)
    peak = np.abs(block).max(axis=1) if block.shape[1] else np.zeros(len(block), dtype=np.float32)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(block / scale[:, None]), -127, 127).astype(np.int8)
    wide = block.astype(np.float64)
    error = np.linalg.norm(wide - scale[:, None].astype(np.float64) * codes, axis=1)
    norm = np.linalg.norm(wide, axis=1)
    meta = np.empty((len(block), 3), dtype=np.float32)
    meta[:, 0] = scale
    meta[:, 1] = np.nextafter(error.astype(np.float32), np.float32(np.inf))
    meta[:, 2] = np.nextafter(norm.astype(np.float32), np.float32(np.inf))
    return codes, meta


@dataclass(slots=True)
class Quantized:
    """Codes and (scale, error, norm) of an index's rows ``[0, n)``, in RAM or mapped."""

    codes: np.ndarray  # (n, dim) int8
    meta: np.ndarray  # (n, 3) float32

    @property
    def n(self) -> int:
        return len(self.codes)

    def bounds(self, rows: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bounds (float64) of the float32 dot of each row (every one below :attr:`n`) with
        ``query``. The estimate may be summed in any order (BLAS): the slack covers it."""
        rows = np.asarray(rows, dtype=np.int64)
        codes, meta, wide = _buffers(rows.size, self.codes.shape[1])
        # Gathered into buffers this thread reuses (a fresh gather of a thousand scattered rows
        # costs twice as much, most of it in touching new memory), checked bounds first.
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= self.n):
            raise IndexError("a row outside the int8 copy")
        np.take(self.codes, rows, axis=0, out=codes, mode="clip")
        np.take(self.meta, rows, axis=0, out=meta, mode="clip")
        return bounds_of(codes, meta, query, wide)


def bounds_of(
    codes: np.ndarray, meta: np.ndarray, query: np.ndarray, wide: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds (float64) of the float32 dot with ``query`` of rows given by their int8 codes and
    (scale, error, norm); ``wide``: a float32 buffer of the codes' shape to convert them into."""
    if wide is None:
        wide = np.empty(codes.shape, dtype=np.float32)
    wide[...] = codes
    estimate = (wide @ query).astype(np.float64) * meta[:, 0]
    width = float(np.linalg.norm(query.astype(np.float64))) * (
        meta[:, 1].astype(np.float64) + SLACK * meta[:, 2].astype(np.float64)
    )
    return estimate - width, estimate + width


_scratch = threading.local()


def _buffers(rows: int, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    held = getattr(_scratch, "held", None)
    if held is None or held[0].shape[1] != dim or len(held[0]) < rows:
        size = max(rows, 1024)
        held = _scratch.held = (
            np.empty((size, dim), dtype=np.int8),
            np.empty((size, 3), dtype=np.float32),
            np.empty((size, dim), dtype=np.float32),
        )
    return held[0][:rows], held[1][:rows], held[2][:rows]


def build(values, n: int, path: Path | None = None) -> Quantized | None:
    """The copy of the first ``n`` rows of ``values`` (an index's matrix: in RAM, mapped or
    split), read a block at a time; written to ``path`` (two ``.npy`` files, then mapped
    read-only: shared by every process that maps them) or held in RAM; None when the files
    written cannot be read back."""
    dim = values.shape[1]
    if path is None:
        codes, meta = np.empty((n, dim), dtype=np.int8), np.empty((n, 3), dtype=np.float32)
        _fill(values, n, codes, meta)
        return Quantized(codes, meta)
    # Named for this call: two indexes of one process (two services over one folder) may make
    # the same copy at once, and a file truncated under another's mapping kills the process.
    unique = f"{os.getpid()}.{uuid.uuid4().hex[:8]}"
    temporary = {part: path.with_name(f"{path.name}.{part}.{unique}.tmp.npy") for part in ("codes", "meta")}
    try:
        codes = new_npy(temporary["codes"], np.int8, (n, dim))
        meta = new_npy(temporary["meta"], np.float32, (n, 3))
        _fill(values, n, codes, meta)
        codes.flush()
        meta.flush()
        del codes, meta
        for part in ("codes", "meta"):
            os.chmod(temporary[part], 0o600)
            os.replace(temporary[part], files(path)[part])
    finally:  # a full disk (an OSError from new_npy) leaves no half-written file behind
        for part in ("codes", "meta"):
            temporary[part].unlink(missing_ok=True)
    return load(path)


def _fill(values, n: int, codes: np.ndarray, meta: np.ndarray) -> None:
    from .matrix import read_block

    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        codes[start:stop], meta[start:stop] = quantize(read_block(values, start, stop))


def files(path: Path) -> dict[str, Path]:
    """The two files of a copy kept at ``path`` (a prefix)."""
    return {part: path.with_name(f"{path.name}.{part}.npy") for part in ("codes", "meta")}


def load(path: Path) -> Quantized | None:
    """A copy written by :func:`build`, mapped; None when it is missing or unreadable."""
    from .matrix import map_npy

    named = files(path)
    try:
        codes = map_npy(named["codes"], pread_from=1 << 62, whole=True)
        meta = map_npy(named["meta"], pread_from=1 << 62, whole=True)
    except (OSError, ValueError):
        return None
    if codes.ndim != 2 or meta.shape != (len(codes), 3) or codes.dtype != np.int8:
        return None
    return Quantized(codes, meta)
