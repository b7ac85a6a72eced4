"""Row arrays that need not be resident: a memory-mapped file for the rows a snapshot holds,
RAM for the rows added after it.

At a million 1024-d memories the float32 vectors are 4 GB: more than a process should hold,
and the same bytes in every worker. They are read only for the few hundred candidates of a
search (the exact re-score), so they can stay in a file the OS caches once for every process
that maps it. :class:`SplitRows` is such a file's rows followed by the rows added since, kept
in RAM; a mapped row is never written (a row's vector never changes while the row lives).

A large index built from the store (not from a snapshot) writes its vectors straight into a
file (:func:`spill`), then maps it read-only (:func:`seal`): the process never holds them all.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import mmap
import os
import sys
import threading
import weakref
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger("capsule.search.matrix")

# Above this size a matrix built from the store is written to a file rather than held in RAM.
RESIDENT_MAX = 512 << 20
# From this size a mapped file's rows are read with a system call each (see read_rows). A smaller
# one is read through its mapping: mapping all of it costs less than a call per row (a 10k x 384
# snapshot's 15 MB: a search's exact re-score 0.4 ms instead of 3-4 ms for ~900 calls).
PREAD_FROM = 64 << 20
# What one POSIX_FADV_WILLNEED reads at most on Linux (the device's read-ahead window bounds
# it; 8 MB here): a whole file is advised a step at a time (read_ahead).
READ_AHEAD_STEP = 8 << 20
MAPPED_READ_FROM = 256  # rows of a small matrix read at once through its mapping (see read_rows)


def is_mapped(values: object) -> bool:
    """True for a read-only array over a memory-mapped file (the OS's pages, shared)."""
    if isinstance(values, SplitRows):
        return True
    if not isinstance(values, np.ndarray) or values.flags.writeable:
        return False
    base = values
    while base is not None:
        if isinstance(base, (mmap.mmap, np.memmap)):
            return True
        base = getattr(base, "base", None)
    return False


def resident_bytes(values: object) -> int:
    """What an array costs this process's RAM: nothing for rows in a mapped file."""
    if isinstance(values, SplitRows):
        return values.tail.nbytes
    return 0 if is_mapped(values) else int(getattr(values, "nbytes", 0))


def map_npy(
    path: str | Path, *, pread_from: int = PREAD_FROM, whole: bool = False, map_ahead: bool = True
) -> np.ndarray:
    """A ``.npy`` file mapped read-only, read ahead only as asked: a search reads scattered rows,
    and reading ahead around each would make the process map (and count) many more.

    The file is read into the OS's cache now (:func:`read_ahead`) where every search reads a
    part of it: ``whole`` (sign codes, postings, the int8 copy), or a file read through its
    mapping (below ``pread_from``: a global search reads candidates' rows of every project's
    matrix), whose pages are then mapped too unless ``map_ahead`` is False (a file a search
    may not read at all: a project's postings, where a global search reads its tenant's
    table instead). Nothing else is mapped until read."""
    array = np.load(path, mmap_mode="r")
    raw = getattr(array, "_mmap", None)
    if raw is not None:
        _random(raw)
    if array.nbytes < pread_from:
        read_ahead(path, mapping=raw if map_ahead else None)
    elif whole:
        read_ahead(path)
    if array.nbytes < pread_from:
        # A plain array over the mapping (still mapped: its base is the memmap): every slice or
        # gather of a memmap makes another memmap object, in Python (__getitem__, then
        # __array_finalize__), and a global search reads a few rows of each of its indexes.
        return np.asarray(array)
    # Rows are read from the file, not through the mapping (see read_rows): held open so a
    # file unlinked meanwhile (a newer snapshot replaced it) still reads.
    fd = os.open(path, os.O_RDONLY)
    array._rows_fd = fd
    weakref.finalize(array, os.close, fd)
    return array


def read_rows(values, rows: np.ndarray) -> np.ndarray:
    """``values[rows]``, read with a system call per row where the rows sit in a mapped file.

    Through the mapping, each row read makes the OS map the cached pages around it too (fault
    around): after a few hundred searches a process maps most of a 4 GB matrix, shared and
    reclaimable but counted as its own. Read, the bytes are copied and nothing stays mapped."""
    if isinstance(values, SplitRows):
        rows = np.asarray(rows, dtype=np.int64)
        low = rows < values.split
        out = np.empty((rows.size, *values.base.shape[1:]), dtype=values.dtype)
        out[low] = read_rows(values.base, rows[low])
        out[~low] = values.tail[rows[~low] - values.split]
        return out
    fd = getattr(values, "_rows_fd", None)
    if fd is None or values.ndim != 2 or not values.flags.c_contiguous:
        return values[rows]
    if len(rows) >= MAPPED_READ_FROM and values.nbytes < PREAD_FROM:
        # A small matrix read by system calls has an int8 copy (capsule.search.snapshot): a search reads
        # a few dozen of its rows. One that reads hundreds (a chat's turns and their neighbours,
        # scored without the copy) reads them through the mapping, as before it had a copy.
        return np.asarray(values)[rows]
    width = values.shape[1] * values.itemsize
    out = np.empty((len(rows), values.shape[1]), dtype=values.dtype)
    if not out.size:  # no row (or no column): a memoryview of nothing cannot be cast
        return out
    view = memoryview(out).cast("B")
    start = values.offset
    for i, row in enumerate(np.asarray(rows, dtype=np.int64).tolist()):
        os.preadv(fd, [view[i * width : (i + 1) * width]], start + row * width)
    return out


def read_block(values, start: int, stop: int) -> np.ndarray:
    """Rows ``[start, stop)`` of ``values`` as a plain array; from a mapped file with one system
    call (nothing stays mapped: see :func:`read_rows`)."""
    if isinstance(values, SplitRows):
        low = min(stop, values.split)
        parts = [read_block(values.base, start, low)] if start < low else []
        if stop > values.split:
            parts.append(values.tail[max(start, values.split) - values.split : stop - values.split])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    fd = getattr(values, "_rows_fd", None)
    if fd is None or values.ndim != 2 or not values.flags.c_contiguous:
        return np.array(values[start:stop])
    out = np.empty((stop - start, values.shape[1]), dtype=values.dtype)
    if out.size:
        width = values.shape[1] * values.itemsize
        view = memoryview(out).cast("B")
        done = 0
        while done < len(view):  # a read may return less than asked
            got = os.preadv(fd, [view[done:]], values.offset + start * width + done)
            if got <= 0:
                raise OSError(f"the matrix file ended at row {start + done // width}")
            done += got
    return out


_scratch = threading.local()  # per thread: a search gathers its candidates' rows into it


def row_dots(values, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``einsum("ij,j->i", read_rows(values, rows), query)``: each row's float32 dot, summed in
    einsum's one fixed order (the same wherever the row sits, so the same sums as ever).

    Rows of an array in RAM are gathered by ``np.take`` into a buffer this thread reuses:
    a fresh gather (``values[rows]``) of a search's thousand rows costs a third more, most of it
    in touching new memory. The buffer never leaves this function."""
    if (
        isinstance(values, SplitRows)
        or getattr(values, "_rows_fd", None) is not None
        or values.ndim != 2
        or not rows.size
        or int(rows.max()) >= len(values)
        or int(rows.min()) < 0
    ):
        return np.einsum("ij,j->i", read_rows(values, rows), query)
    shape = (rows.size, values.shape[1])
    buffer = getattr(_scratch, "buffer", None)
    if buffer is None or buffer.dtype != values.dtype or buffer.shape[1] != shape[1] or len(buffer) < shape[0]:
        buffer = _scratch.buffer = np.empty((max(shape[0], 1024), shape[1]), dtype=values.dtype)
    block = buffer[: shape[0]]
    np.take(values, rows, axis=0, out=block, mode="clip")  # clip: no bounds pass (checked above)
    return np.einsum("ij,j->i", block, query)


def take_parts(parts: Sequence[tuple[Any, np.ndarray | None]], width: int, dtype) -> np.ndarray:
    """``np.concatenate([read_rows(values, rows) for values, rows in parts])`` (rows None: the
    values are the rows already), gathered straight into one array: a plain array's rows with
    one ``np.take`` each. A global search reads a few rows of each of a hundred indexes, where
    each gather, copy and sum of its own is a few numpy calls more per index."""
    out = np.empty((sum(len(values) if rows is None else rows.size for values, rows in parts), width), dtype=dtype)
    at = 0
    for values, rows in parts:
        stop = at + (len(values) if rows is None else rows.size)
        if rows is None:
            out[at:stop] = values
        elif type(values) is np.ndarray and values.dtype == out.dtype:
            np.take(values, rows, axis=0, out=out[at:stop])
        else:
            out[at:stop] = read_rows(values, rows)
        at = stop
    return out


class SplitRows:
    """Rows ``[0, split)`` from a read-only array (a mapped file), rows ``[split, ...)`` in RAM.

    Supports what an index does with its matrix: read one row, a slice or a list of rows,
    write rows after ``split``, grow. Reads return ordinary arrays.
    """

    def __init__(self, base: np.ndarray, capacity: int) -> None:
        self.base = base
        self.split = len(base)
        self.tail = np.zeros((max(0, capacity - self.split), *base.shape[1:]), dtype=base.dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.split + len(self.tail), *self.base.shape[1:])

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype

    ndim = 2

    def __len__(self) -> int:
        return self.split + len(self.tail)

    @property
    def nbytes(self) -> int:
        return self.base.nbytes + self.tail.nbytes

    def grown(self, capacity: int) -> SplitRows:
        grown = SplitRows(self.base, capacity)
        grown.tail[: len(self.tail)] = self.tail
        return grown

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            return self.base[key] if key < self.split else self.tail[key - self.split]
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1:
                raise IndexError("SplitRows slices have step 1")
            return self.take(np.arange(start, stop))
        return self.take(np.asarray(key))

    def take(self, rows: np.ndarray) -> np.ndarray:
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64, copy=False)
        low = rows < self.split
        if low.all():
            return self.base[rows]
        out = np.empty((rows.size, *self.base.shape[1:]), dtype=self.base.dtype)
        out[low] = self.base[rows[low]]
        out[~low] = self.tail[rows[~low] - self.split]
        return out

    def __setitem__(self, key, values) -> None:
        rows = np.atleast_1d(np.asarray(key) if not isinstance(key, slice) else np.arange(*key.indices(len(self))))
        if rows.size and int(rows.min()) < self.split:
            raise ValueError("rows held in the mapped file are read-only")
        self.tail[rows - self.split] = values


def blocked_dot(matrix, query: np.ndarray, n: int, block: int = 65536) -> np.ndarray:
    """``matrix[:n] @ query`` a block of rows at a time: a mapped matrix is never copied whole."""
    if not is_mapped(matrix):
        return matrix[:n] @ query
    out = np.empty(n, dtype=np.float32)
    for start in range(0, n, block):
        stop = min(n, start + block)
        out[start:stop] = matrix[start:stop] @ query
    return out


def new_npy(path: Path, dtype, shape: tuple[int, ...]) -> np.memmap:
    """A new ``.npy`` file of ``shape``, mapped for writing, its disk blocks allocated first.

    A mapped page written into a hole of a sparse file on a full disk does not fail a call: the
    kernel kills the process (SIGBUS). Allocating the whole file up front turns a full disk into
    an OSError here, before a row is written; the caller removes the file."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, os.fstat(fd).st_size)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system that cannot: as before
            del out
            raise
    finally:
        os.close(fd)
    return out


class Spill:
    """A matrix being filled straight into a ``.npy`` file (not RAM), then mapped read-only."""

    def __init__(self, path: Path, rows: int, dim: int) -> None:
        self.path = path
        try:
            writable = new_npy(path, np.float32, (rows, dim))
        except OSError:
            path.unlink(missing_ok=True)
            raise
        self.offset = writable.offset
        del writable  # the header is written; rows go through a mapping of our own
        # Held open: the file may be unlinked (a newer snapshot replaced it) while this maps it.
        self.fd = os.open(path, os.O_RDWR)
        self._map = mmap.mmap(self.fd, 0)
        _random(self._map)
        self.rows, self.dim = rows, dim
        self.matrix = np.frombuffer(self._map, dtype=np.float32, count=rows * dim, offset=self.offset).reshape(
            rows, dim
        )

    def seal(self) -> np.ndarray:
        """The filled matrix, mapped read-only. Once the writable one is dropped (:meth:`close`)
        the pages written leave this process (they stay in the OS's cache, shared) and are
        mapped again only as rows are read."""
        sealed = mmap.mmap(self.fd, 0, prot=mmap.PROT_READ)
        _random(sealed)
        return np.frombuffer(sealed, dtype=np.float32, count=self.rows * self.dim, offset=self.offset).reshape(
            self.rows, self.dim
        )

    def close(self) -> None:
        self.matrix = None
        try:
            self._map.close()
        except BufferError:  # still referenced somewhere: freed with its last reference instead
            pass
        os.close(self.fd)


def read_ahead(path: str | Path, mapping: mmap.mmap | None = None) -> None:
    """Have the OS read a whole file into its cache, without mapping or copying it: a large
    file in a background thread (:class:`_Reader`), so a first search does not wait for it.

    After a restart, or once the OS dropped the cache, the first searches of a large index
    otherwise wait on the disk for each page of its sign codes, postings and int8 copy they
    touch: at 1M x 1024 with a cold cache, 76-92 ms wall p50 over the first 200 searches
    against 13-15 ms with those files cached. ``MADV_WILLNEED`` on the mapping reads only the
    device's read-ahead window (8 MB here), so the file is advised a window at a time.

    ``mapping``: the file's mapping, whose rows searches read through it; its pages are then
    mapped too, by the same thread (:func:`_populate`)."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        size = os.path.getsize(path)
    except OSError:
        return
    if size <= READ_AHEAD_STEP and mapping is None:
        _advise(path, size)
    else:
        _READER.add(path, size, mapping)


class _Reader:
    """One thread reading ahead the large files asked for, one after another, while there are
    any: a thread per file (a global search maps a hundred matrices) kept both cores in the
    kernel filling the cache, and the first search waited on them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[tuple[str | Path, int, mmap.mmap | None]] = deque()
        self._thread: threading.Thread | None = None

    def add(self, path: str | Path, size: int, mapping: mmap.mmap | None = None) -> None:
        with self._lock:
            self._queue.append((path, size, mapping))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="capsule-read-ahead", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._thread = None
                    return
                path, size, mapping = self._queue.popleft()
            try:
                _advise(path, size)
                if mapping is not None:
                    _populate(mapping)
            except Exception:  # only a hint: one file's failure must not stop the reader
                logger.warning("could not read %s ahead", path, exc_info=True)
            mapping = None  # not kept alive by the reader once done


_READER = _Reader()


def _advise(path: str | Path, size: int) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # replaced by a newer snapshot meanwhile: nothing to read
    try:
        for offset in range(0, size, READ_AHEAD_STEP):
            os.posix_fadvise(fd, offset, READ_AHEAD_STEP, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass  # only a hint: the pages are read when touched
    finally:
        os.close(fd)


MADV_POPULATE_READ = 22  # Linux 5.14 and later: fault a mapping's pages in, in one call
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _populate(mapping: mmap.mmap) -> None:
    """Map every page of a read-only mapping now, as touching each would, in one system call.

    A global search reads its candidates' rows through a hundred small matrices' mappings,
    and each first touch of a page is a fault (the OS maps 16 pages around it): in a fresh
    process at 1M over 100 projects the first 200 searches took about 5 ms more each than
    later ones. The pages end up mapped either way; done here, the searches do not wait for
    them. A kernel without the call (or a mapping closed meanwhile) leaves it to the faults."""
    if _LIBC is None or mapping.closed:
        return
    view = np.frombuffer(mapping, dtype=np.uint8)
    try:
        _LIBC.madvise(ctypes.c_void_p(view.ctypes.data), ctypes.c_size_t(view.size), MADV_POPULATE_READ)
    finally:
        del view  # the mapping can be closed again


def _random(mapping: mmap.mmap) -> None:
    if hasattr(mmap, "MADV_RANDOM"):
        mapping.madvise(mmap.MADV_RANDOM)


def spill_path(folder: Path, stem: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"{stem}.{os.getpid()}.{os.urandom(4).hex()}.spill.npy"
