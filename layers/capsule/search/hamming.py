"""The first pass of the vector stage over a large index: nearest rows by Hamming distance.

numpy computes the distances of a million 256-bit codes in about 10 ms (a temporary per
operation) and then ranks them; faiss's counting-sort k-nearest (``hammings_knn_mc``) does
both in one pass over the codes at close to memory speed (32 MB at a million rows: about
4 ms on this 2-core machine, under load). It reads the codes where they are (a mapped file
too), and a bitmap of the rows a filter allows. Without faiss, :func:`nearest` answers None
and the caller ranks with numpy: the same candidates but for ties at the cut.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np

# faiss's loader reports at INFO which CPU build it tried ("Could not load library with AVX2
# support due to: ModuleNotFoundError"): under serve's INFO logging that reads as an error at every start.
logging.getLogger("faiss.loader").setLevel(logging.WARNING)


@functools.cache
def _faiss() -> Any:
    """faiss, loaded at the first search of a large index (None where it is not installed): a
    cold start of any hosted route (health, get) would otherwise pay its 0.08 s CPU and 15 MB."""
    try:  # pinned in pyproject.toml; optional here so a bare numpy install still searches
        import faiss
    except ImportError:  # pragma: no cover - exercised only where faiss is missing
        return None
    # One thread per search: the server runs a search per worker, the machine has 2 cores.
    faiss.omp_set_num_threads(1)
    return faiss


def available() -> bool:
    return _faiss() is not None


def nearest(codes: np.ndarray, query: np.ndarray, count: int, eligible: np.ndarray | None) -> np.ndarray | None:
    """Rows of ``codes`` ((rows, words) uint64, C-contiguous) nearest ``query`` ((words,)
    uint64): the ``count`` smallest distances among the ``eligible`` rows (None: all), in
    ascending distance; of rows tied at the cut, those faiss meets first (the same rows for
    the same index). None without faiss."""
    faiss = _faiss()
    if faiss is None:
        return None
    n, words = codes.shape
    count = min(count, n)
    if not count or not words:
        return np.zeros(0, dtype=np.int64)
    codes = np.ascontiguousarray(codes)
    query = np.ascontiguousarray(query, dtype=np.uint64)
    distances = np.empty(count, dtype=np.int32)
    labels = np.full(count, -1, dtype=np.int64)
    selector = None
    if eligible is not None:
        bitmap = np.packbits(eligible[:n], bitorder="little")
        selector = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bitmap))
    faiss.hammings_knn_mc(
        faiss.swig_ptr(query.view(np.uint8)),
        faiss.swig_ptr(codes.view(np.uint8)),
        1,
        n,
        count,
        8 * words,
        faiss.swig_ptr(distances),
        faiss.swig_ptr(labels),
        selector,
    )  # the SWIG wrapper takes a selector since faiss 1.8
    return labels[labels >= 0]
