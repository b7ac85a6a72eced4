"""The bench's data and measures: seeded synthetic vectors and texts, the exact truth they are
scored against, timing and recall, and a service over the bench's database (``capsule bench`` and
its ``--ops``/scale runs, scripts/scale and the search tests read them)."""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

LOCAL_TENANT = "bench"


PROJECT = "bench"


K = 10


@dataclass
class Dataset:
    vectors: np.ndarray  # (n, d) float32, unit rows
    texts: list[str]
    queries: np.ndarray  # (q, d)
    query_texts: list[str]


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def make_dataset(n: int, dim: int, queries: int, seed: int = 0) -> Dataset:
    """Clustered vectors (about 100 per cluster) and Zipf-distributed words for BM25.

    Made a block of rows at a time in float32 (a million 1024-d rows are 4 GB; float64
    temporaries of them all would be 12 GB)."""
    rng = np.random.default_rng(seed)
    clusters = max(8, n // 100)
    centres = rng.standard_normal((clusters, dim), dtype=np.float32)
    labels = rng.integers(0, clusters, n)
    vectors = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 65536):
        stop = min(n, start + 65536)
        block = rng.standard_normal((stop - start, dim), dtype=np.float32)
        block *= 0.6
        block += centres[labels[start:stop]]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        vectors[start:stop] = block
    vocab = [f"w{i}" for i in range(20000)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    words = rng.choice(len(vocab), size=(n, 14), p=weights)
    texts = [" ".join(row) for row in np.asarray(vocab, dtype=object)[words].tolist()]
    picks = rng.integers(0, n, queries)
    # A query is a perturbed memory: cosine about 0.9 to it, nearer still to its cluster.
    noise = rng.standard_normal((queries, dim)).astype(np.float32) * (0.5 / np.sqrt(dim))
    query_vectors = _unit(vectors[picks] + noise)
    query_texts = [" ".join(vocab[w] for w in words[i][:3]) + f" q{j}" for j, i in enumerate(picks)]
    return Dataset(vectors, texts, query_vectors, query_texts)


class TableEmbedder:
    """Vectors looked up by text: the bench measures search, not the embedding model."""

    def __init__(self, table: dict[str, np.ndarray], dim: int) -> None:
        self.table, self.dim, self.model_id = table, dim, f"bench-{dim}"

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    return {"p50_ms": round(statistics.median(ordered), 3), "p95_ms": round(p95, 3)}


def timed(fn: Callable[[int], Any], count: int) -> tuple[list[float], list[Any]]:
    samples, outputs = [], []
    for i in range(count):
        start = time.perf_counter()
        outputs.append(fn(i))
        samples.append((time.perf_counter() - start) * 1000)
    return samples, outputs


def recall(found: Sequence[Sequence[int]], truth: np.ndarray) -> float:
    hits = sum(len(set(map(int, f[:K])) & set(map(int, t[:K]))) for f, t in zip(found, truth))
    return round(hits / (K * len(truth)), 4)


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def exact_top(matrix: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """The exact top 10 of every query, one pass over the matrix (a block of rows at a time)."""
    best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    for start in range(0, len(matrix), 65536):
        scores = queries @ matrix[start : start + 65536].T  # (q, block)
        take = min(K, scores.shape[1])
        part = np.argpartition(-scores, take - 1, axis=1)[:, :take]
        best_s = np.concatenate((best_s, np.take_along_axis(scores, part, axis=1)), axis=1)
        best_i = np.concatenate((best_i, part + start), axis=1)
        keep = np.argsort(-best_s, axis=1, kind="stable")[:, :K]
        best_s, best_i = np.take_along_axis(best_s, keep, axis=1), np.take_along_axis(best_i, keep, axis=1)
    return best_i


def ingest(db: Path, data: Dataset, projects: int = 1) -> dict[str, float]:
    """Insert every memory through the store's bulk insert in batches of up to 10,000 (one
    transaction each, ``MemoryStore.insert_bulk``);
    with ``projects`` > 1, memory i goes to project ``p{i % projects}``. The rate is also
    given for each tenth of the run (sustained: the slowest tenth, and the last)."""
    from capsule.core.records import MemoryRecord
    from capsule.core.text import sha256
    from capsule.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    store.migrate()
    base = datetime(2025, 1, 1, tzinfo=UTC)
    model = f"bench-{data.vectors.shape[1]}"
    n = len(data.texts)
    tenth = max(1000, -(-n // 10000) * 1000)
    start = mark = time.perf_counter()
    cpu_start = time.process_time()
    rates = []
    # A batch is of one project (the store's insert writes one project's rows).
    order = np.concatenate([np.arange(p, n, projects) for p in range(projects)]).tolist()
    batch_rows = min(10_000, tenth)
    bounds = sorted(
        {*range(0, n, batch_rows), *(sum(len(range(q, n, projects)) for q in range(p)) for p in range(projects))}
    )
    for first, stop in zip(bounds, [*bounds[1:], n]):
        batch = []
        for i in order[first:stop]:
            at = base + timedelta(seconds=i)
            batch.append(
                MemoryRecord(
                    id=f"m{i:07d}",
                    tenant=LOCAL_TENANT,
                    project=PROJECT if projects == 1 else f"p{i % projects}",
                    content=data.texts[i],
                    sha256=sha256(data.texts[i] + str(i)),
                    occurred_at=at,
                    created_at=at,
                    updated_at=at,
                    embedding=data.vectors[i],
                    model=model,
                )
            )
        store.insert_bulk(batch, limit=10_000_000, dedupe_after=None, actor="bench")
        done = first + len(batch)
        if done >= (len(rates) + 1) * tenth or done == n:
            now = time.perf_counter()
            rates.append(round((done - (len(rates) * tenth)) / (now - mark)))
            mark = now
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start  # beside the wall time: the machine is shared
    store.close()
    size = sum(os.path.getsize(f) for f in (db, Path(f"{db}-wal")) if f.exists())
    return {
        "memories_per_s": round(n / seconds),
        "seconds": round(seconds, 3),
        "cpu_s": round(cpu, 1),
        "memories_per_cpu_s": round(n / cpu) if cpu else None,
        "per_tenth": rates,
        "slowest_tenth_per_s": min(rates),
        "last_tenth_per_s": rates[-1],
        "db_bytes": size,
        "db_bytes_per_memory": round(size / n),
    }


def service_for(db: Path, data: Dataset, *, exact: bool = False, snapshots: bool = False):
    """A service over the bench's database; ``snapshots``: it loads (and keeps) the index
    snapshot beside the database, as a long-lived server does."""
    from capsule.config import Settings
    from capsule.service.memory_service import MemoryService
    from capsule.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    table = dict(zip(data.query_texts, data.queries))
    settings = Settings(
        data_dir=db.parent,
        retention_limit=1_000_000,
        query_cache_entries=0,
        search_exact=exact,
        index_snapshot_min=1 if snapshots else 0,
    )
    return MemoryService(store, TableEmbedder(table, data.vectors.shape[1]), settings=settings)


def numpy_brute(data: Dataset, truth: np.ndarray) -> dict[str, Any]:
    matrix = np.ascontiguousarray(data.vectors)

    def one(i: int) -> np.ndarray:
        scores = matrix @ data.queries[i]
        part = np.argpartition(-scores, K)[:K]
        return part[np.argsort(-scores[part])]

    samples, found = timed(one, len(data.queries))
    return {**percentiles(samples), "recall@10": recall(found, truth)}
