"""Sign bits of vectors, and the packed rows a store keeps of each memory for the index.

The index's first stage compares the sign bit of every dimension (packed: 1024-d -> 128
bytes). A store keeps, at write time, each memory's packed row (:func:`pack_row`: tie-break
key, times, vector size, sign bits), so a large index loads those without any vector
(:class:`Packed` reads them as arrays).
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

from ..core.records import IndexColumns


def sign_codes(vectors: np.ndarray, words: int) -> np.ndarray:
    """Packed sign bits of each row, padded to ``words`` 64-bit words: (rows, words) uint64."""
    vectors = np.asarray(vectors)
    packed = (vectors.shape[-1] + 7) // 8
    padded = np.zeros((*vectors.shape[:-1], words * 8), dtype=np.uint8)
    if vectors.ndim == 2:
        for start in range(0, vectors.shape[0], 2048):  # blocks: the temporary booleans stay in cache
            padded[start : start + 2048, :packed] = np.packbits(vectors[start : start + 2048] > 0, axis=-1)
    else:
        padded[..., :packed] = np.packbits(vectors > 0, axis=-1)
    return padded.view(np.uint64)


# A packed row (format 1), little-endian: format, vector size in bytes (0: none), tie-break
# key, occurred and created (epoch seconds), then the vector's sign bits ((dim + 63) // 64 words).
PACKED = np.dtype([("format", "<u4"), ("size", "<u4"), ("key", "<i8"), ("occurred", "<f8"), ("created", "<f8")])
_HEAD = struct.Struct("<IIqdd")


def pack_row(key: int, occurred: float, created: float, vector: np.ndarray | None) -> bytes:
    """What an index loads of a memory that never changes while it lives, kept by a store at
    write time (see ``IndexColumns.packed``)."""
    size = 0 if vector is None else 4 * vector.size
    head = _HEAD.pack(1, size, key, occurred, created)
    if not size:
        return head
    vector = np.asarray(vector, dtype=np.float32)
    return head + sign_codes(vector[None, :], (vector.size + 63) // 64)[0].tobytes()


def stable_key(memory_id: str) -> int:
    """A tie-break key for a memory that is the same in every process (unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(memory_id.encode(), digest_size=8).digest(), "little") >> 1


class Packed:
    """Packed rows (:func:`pack_row`) read as arrays: the headers, and the sign bits on demand."""

    def __init__(self, c: IndexColumns, n: int) -> None:
        self.n = n
        self.lengths = np.fromiter(c.packed_lengths, dtype=np.int64, count=n)
        self.buffer = np.frombuffer(c.packed, dtype=np.uint8)
        head = PACKED.itemsize
        if (self.lengths < head).any() or self.buffer.size != int(self.lengths.sum()):
            raise ValueError("packed rows are shorter than their header")
        self.uniform = bool((self.lengths == self.lengths[0]).all())
        if self.uniform:  # the common case: one vector size throughout, a table of rows
            self.table = self.buffer.reshape(n, int(self.lengths[0]))
            heads = np.ascontiguousarray(self.table[:, :head])
        else:
            self.offsets = np.cumsum(self.lengths) - self.lengths
            heads = self.buffer[self.offsets[:, None] + np.arange(head)]
        self.head = heads.view(PACKED)[:, 0]
        if (self.head["format"] != 1).any():
            raise ValueError("packed rows of an unknown format")

    def codes(self, usable: np.ndarray, words: int) -> np.ndarray:
        """(n, words) uint64: the sign bits of the usable rows (all of ``words`` words), 0 elsewhere."""
        start, width = PACKED.itemsize, 8 * words
        if not words:
            return np.zeros((self.n, 0), dtype=np.uint64)
        if self.uniform and self.table.shape[1] == start + width:
            codes = np.ascontiguousarray(self.table[:, start:]).view(np.uint64)
            if not usable.all():
                codes[~usable] = 0
            return codes
        rows = np.flatnonzero(usable)
        offsets = self.offsets if not self.uniform else np.arange(self.n, dtype=np.int64) * self.table.shape[1]
        picked = self.buffer[(offsets[rows] + start)[:, None] + np.arange(width)]
        codes = np.zeros((self.n, words), dtype=np.uint64)
        codes[rows] = picked.view(np.uint64)
        return codes
