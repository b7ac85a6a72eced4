"""``capsule bench``: speed and recall of search, side by side, in one reproducible run.

For each size N and dimension d: synthetic clustered unit vectors and short texts (seeded),
ingested into a fresh SQLite store (the embedder excluded: vectors are given), then

* ``cold``: the first search in a fresh process (load from SQLite + search), p50 of a few runs,
  and the same from the index snapshot a first process wrote (``snap``). A large project's
  first search reads no vectors but its candidates'; the rest are read after it returns
  (``settle_ms_after_first_search`` in the JSON: that and writing the snapshot, not part of
  the first search);
* ``warm``: the whole hybrid search through :class:`MemoryService` on a warm index
  (vector + BM25 + fusion + filters; the query's vector is looked up, not computed);
* ``warm-vector``: the vector stage alone (binary codes + exact re-scoring), with recall@10;
* ``numpy``: the brute-force limit, the matrix already in RAM, one mat-vec and a partial sort;
* ``original``: the original service's algorithm: the 500 most recent memories fetched with
  their vectors as lists of numbers, scored in Python (it never sees older memories); run in
  turns of ten queries with the warm hybrid search, so ``orig/warm`` is a side-by-side ratio;
* ``chromadb``: an embedded vector store from PyPI with its default (HNSW) index, if installed.

Every recall@10 is against exact float32 search over all N. Prints a table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

LOCAL_TENANT = "bench"
PROJECT = "bench"
ORIGINAL_WINDOW = 500
K = 10


# ---- synthetic data ---------------------------------------------------------


@dataclass
class Dataset:
    vectors: np.ndarray  # (n, d) float32, unit rows
    texts: list[str]
    queries: np.ndarray  # (q, d)
    query_texts: list[str]


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def make_dataset(n: int, dim: int, queries: int, seed: int = 0) -> Dataset:
    """Clustered vectors (about 100 per cluster) and Zipf-distributed words for BM25."""
    rng = np.random.default_rng(seed)
    clusters = max(8, n // 100)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    labels = rng.integers(0, clusters, n)
    vectors = _unit(centres[labels] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32))
    vocab = [f"w{i}" for i in range(20000)]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    words = rng.choice(len(vocab), size=(n, 14), p=weights)
    texts = [" ".join(vocab[w] for w in row) for row in words]
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


# ---- measuring ------------------------------------------------------------------


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
    out = []
    for q in queries:
        scores = matrix @ q
        part = np.argpartition(-scores, K)[:K]
        out.append(part[np.argsort(-scores[part])])
    return np.array(out)


# ---- the store ------------------------------------------------------------------


def ingest(db: Path, data: Dataset) -> dict[str, float]:
    """Insert every memory through the store in batches of 1,000 (one transaction each)."""
    from capsule.records import MemoryRecord
    from capsule.store.sqlite import SQLiteStore
    from capsule.text import sha256

    store = SQLiteStore(db)
    store.migrate()
    base = datetime(2025, 1, 1, tzinfo=timezone.utc)
    model = f"bench-{data.vectors.shape[1]}"
    start = time.perf_counter()
    for first in range(0, len(data.texts), 1000):
        batch = []
        for i in range(first, min(first + 1000, len(data.texts))):
            at = base + timedelta(seconds=i)
            batch.append(MemoryRecord(
                id=f"m{i:07d}", tenant=LOCAL_TENANT, project=PROJECT, content=data.texts[i],
                sha256=sha256(data.texts[i] + str(i)), occurred_at=at, created_at=at, updated_at=at,
                embedding=data.vectors[i], model=model))
        store.insert(batch, limit=10_000_000, dedupe_after=None, actor="bench")
    seconds = time.perf_counter() - start
    store.close()
    return {"memories_per_s": round(len(data.texts) / seconds), "seconds": round(seconds, 3)}


def service_for(db: Path, data: Dataset, *, exact: bool = False, snapshots: bool = False):
    from capsule.config import Settings
    from capsule.service import MemoryService
    from capsule.store.sqlite import SQLiteStore

    store = SQLiteStore(db)
    table = dict(zip(data.query_texts, data.queries))
    settings = Settings(data_dir=db.parent, retention_limit=1_000_000, query_cache_entries=0,
                        search_exact=exact, index_snapshot_min=1 if snapshots else 0)
    return MemoryService(store, TableEmbedder(table, data.vectors.shape[1]), settings=settings)


def cold_probe(db: str, dim: int, query: str, vector_file: str, snapshots: str) -> dict[str, float]:
    """Run in a fresh process: the first search, from opening the store to the result."""
    from capsule import service as _loaded  # noqa: F401  (imports are not the search)
    from capsule.store import sqlite as _store  # noqa: F401

    vector = np.load(vector_file)
    data = Dataset(np.zeros((0, dim), np.float32), [], vector[None, :], [query])
    start = time.perf_counter()
    service = service_for(Path(db), data, snapshots=snapshots == "1")
    service.search(LOCAL_TENANT, {"project": PROJECT, "query": query, "k": K})
    ms = (time.perf_counter() - start) * 1000
    rss = rss_mb()
    # The vectors of a large project are read after its first search, and then its snapshot
    # is written: not part of the first search, but the probes after this one need it.
    start = time.perf_counter()
    if snapshots == "1":
        service.settle()
    return {"ms": ms, "rss_mb": rss, "settle_ms": (time.perf_counter() - start) * 1000}


def _probe(db: Path, data: Dataset, run: int, snapshots: bool, tmp: str) -> dict[str, float]:
    vector_file = Path(tmp) / "q.npy"
    np.save(vector_file, data.queries[run])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-m", "mcp_client.bench", "--cold-probe", str(db), str(data.vectors.shape[1]),
         data.query_texts[run], str(vector_file), "1" if snapshots else "0"],
        capture_output=True, text=True, env=env, check=True,
    )
    return json.loads(out.stdout)


def cold_searches(db: Path, data: Dataset, runs: int) -> dict[str, Any]:
    """Fresh processes: building the index from SQLite, then loading the snapshot the first wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        built = [_probe(db, data, run, False, tmp) for run in range(runs)]
        writer = _probe(db, data, 0, True, tmp)  # writes the snapshot
        loaded = [_probe(db, data, run, True, tmp) for run in range(runs)]
    return {**percentiles([p["ms"] for p in built]), "runs": runs, "rss_mb": max(p["rss_mb"] for p in built),
            "snapshot": percentiles([p["ms"] for p in loaded]),
            # after the snapshot writer's first search: reading the rest of the vectors, then the snapshot
            "settle_ms_after_first_search": round(writer["settle_ms"], 1)}


# ---- the methods ----------------------------------------------------------------


def warm_hybrid(service, data: Dataset) -> dict[str, Any]:
    load_start = time.perf_counter()
    service.search(LOCAL_TENANT, {"project": PROJECT, "query": data.query_texts[0], "k": K})
    load_s = time.perf_counter() - load_start
    service.settle()  # warm: a large project's vectors, read after its first search, are all in
    complete_s = time.perf_counter() - load_start
    samples, _ = timed(lambda i: service.search(
        LOCAL_TENANT, {"project": PROJECT, "query": data.query_texts[i], "k": K}), len(data.query_texts))
    return {**percentiles(samples), "first_search_s": round(load_s, 3), "complete_s": round(complete_s, 3),
            "rss_mb": rss_mb()}


def warm_vector(service, data: Dataset, truth: np.ndarray) -> dict[str, Any]:
    """The vector stage alone on the warm index: first stage, exact re-scoring, top 10."""
    from capsule.records import Filters
    from capsule.search import _View, _vector_rows

    index = service.indexes.get(LOCAL_TENANT, PROJECT, service.embedder.model_id)
    mask = index.mask(Filters())
    ids = np.array([int(i[1:]) if i is not None else -1 for i in index.records.ids()[: index.n]])

    def one(i: int) -> np.ndarray:
        q = data.queries[i]
        rows = _vector_rows(_View(index, mask), q, service._options)
        scores = np.einsum("ij,j->i", index.vectors(rows), q)
        best = np.argpartition(-scores, K)[:K] if rows.size > K else np.arange(rows.size)
        return ids[rows[best[np.argsort(-scores[best])]]]

    samples, found = timed(one, len(data.queries))
    return {**percentiles(samples), "recall@10": recall(found, truth),
            "candidates": service._options.candidates, "exact": service._options.exact}


def numpy_brute(data: Dataset, truth: np.ndarray) -> dict[str, Any]:
    matrix = np.ascontiguousarray(data.vectors)

    def one(i: int) -> np.ndarray:
        scores = matrix @ data.queries[i]
        part = np.argpartition(-scores, K)[:K]
        return part[np.argsort(-scores[part])]

    samples, found = timed(one, len(data.queries))
    return {**percentiles(samples), "recall@10": recall(found, truth)}


def original(db: Path, data: Dataset, truth: np.ndarray, service) -> dict[str, Any]:
    """The 500 most recent memories with vectors as lists of numbers, scored in Python.

    It runs in turns with the warm service (k = 10 for all), ten queries each, the same
    queries, so each speed-up is a ratio of timings taken side by side, each method in its own
    steady state, whatever else the machine does meanwhile: against the whole hybrid search,
    and against a vector-only search (``mode: vector``), which does what the original did.
    """
    import sqlite3

    conn = sqlite3.connect(db)

    def one(i: int) -> list[int]:
        rows = conn.execute(
            "SELECT id, embedding FROM memories WHERE tenant = ? AND project = ? AND deleted_at IS NULL "
            "ORDER BY created_at DESC LIMIT ?", (LOCAL_TENANT, PROJECT, ORIGINAL_WINDOW)).fetchall()
        docs = [(memory_id, np.frombuffer(blob, dtype="<f4").tolist()) for memory_id, blob in rows]
        q = data.queries[i].tolist()
        qn = math.sqrt(sum(x * x for x in q))
        scored = []
        for memory_id, vec in docs:
            dot = sum(a * b for a, b in zip(q, vec))
            scored.append((dot / (qn * math.sqrt(sum(x * x for x in vec))), memory_id))
        scored.sort(reverse=True)
        return [int(memory_id[1:]) for _, memory_id in scored[:K]]

    samples, found = [], []
    warm: dict[str, list[float]] = {"hybrid": [], "vector": []}
    for first in range(0, len(data.queries), 10):
        count = min(10, len(data.queries) - first)
        for mode, times in warm.items():
            times += timed(lambda i: service.search(LOCAL_TENANT, {
                "project": PROJECT, "query": data.query_texts[first + i], "k": K, "mode": mode}), count)[0]
        took, picked = timed(lambda i: one(first + i), count)
        samples += took
        found += picked
    conn.close()
    result = {**percentiles(samples), "recall@10": recall(found, truth), "window": ORIGINAL_WINDOW}
    for mode, times in warm.items():
        result[f"paired_{mode}"] = percentiles(times)
        result[f"speedup_{mode}"] = round(result["p50_ms"] / result[f"paired_{mode}"]["p50_ms"], 1)
    return result


def chroma(data: Dataset, truth: np.ndarray) -> dict[str, Any]:
    try:
        import chromadb
    except ImportError:
        return {"skipped": "chromadb is not installed (pip install 'capsule-memory[bench]')"}
    client = chromadb.EphemeralClient()
    name = f"bench{time.time_ns()}"
    collection = client.create_collection(name, metadata={"hnsw:space": "cosine"})
    batch = client.get_max_batch_size()
    start = time.perf_counter()
    for first in range(0, len(data.vectors), batch):
        part = slice(first, first + batch)
        collection.add(ids=[str(i) for i in range(first, min(first + batch, len(data.vectors)))],
                       embeddings=data.vectors[part])
    build_s = time.perf_counter() - start

    def one(i: int) -> list[int]:
        answer = collection.query(query_embeddings=data.queries[i:i + 1], n_results=K, include=[])
        return [int(x) for x in answer["ids"][0]]

    samples, found = timed(one, len(data.queries))
    client.delete_collection(name)
    return {**percentiles(samples), "recall@10": recall(found, truth), "build_s": round(build_s, 2),
            "version": chromadb.__version__}


# ---- one configuration, the table, the command -------------------------------------


def run_one(n: int, dim: int, queries: int, cold_runs: int, workdir: Path, *, external: bool) -> dict[str, Any]:
    data = make_dataset(n, dim, queries, seed=n + dim)
    truth = exact_top(data.vectors, data.queries)
    db = workdir / f"bench-{n}-{dim}.db"
    out: dict[str, Any] = {"n": n, "dim": dim, "queries": queries}
    out["ingest"] = ingest(db, data)
    out["cold"] = cold_searches(db, data, cold_runs)
    service = service_for(db, data)
    out["warm"] = warm_hybrid(service, data)
    out["warm_vector"] = warm_vector(service, data, truth)
    exact_service = service_for(db, data, exact=True)
    exact_service.search(LOCAL_TENANT, {"project": PROJECT, "query": data.query_texts[0], "k": K})
    out["warm_vector_exact"] = warm_vector(exact_service, data, truth)
    out["warm_exact"] = warm_hybrid(exact_service, data)
    exact_service.store.close()
    out["numpy"] = numpy_brute(data, truth)
    out["original"] = original(db, data, truth, service)
    service.store.close()
    out["chromadb"] = chroma(data, truth) if external else {"skipped": "--no-external"}
    db.unlink(missing_ok=True)
    return out


def table(results: list[dict[str, Any]]) -> str:
    headers = ["N", "dim", "ingest/s", "cold p50", "snap p50", "warm p50", "warm p95", "vec p50", "vec R@10",
               "exact vec p50", "numpy p50", "orig p50", "orig/warm", "orig/vec-only", "orig R@10", "chroma p50", "chroma R@10", "chroma build",
               "RSS MB"]
    rows = []
    for r in results:
        c = r["chromadb"]
        rows.append([
            r["n"], r["dim"], r["ingest"]["memories_per_s"], f"{r['cold']['p50_ms']:.0f} ms",
            f"{r['cold']['snapshot']['p50_ms']:.0f} ms",
            f"{r['warm']['p50_ms']:.2f}", f"{r['warm']['p95_ms']:.2f}", f"{r['warm_vector']['p50_ms']:.2f}",
            r["warm_vector"]["recall@10"], f"{r['warm_vector_exact']['p50_ms']:.2f}",
            f"{r['numpy']['p50_ms']:.2f}", f"{r['original']['p50_ms']:.1f}",
            f"{r['original']['speedup_hybrid']:.1f}x", f"{r['original']['speedup_vector']:.1f}x",
            r["original"]["recall@10"],
            "-" if "skipped" in c else f"{c['p50_ms']:.2f}", "-" if "skipped" in c else c["recall@10"],
            "-" if "skipped" in c else f"{c['build_s']:.1f} s", r["warm"]["rss_mb"],
        ])
    widths = [max(len(str(x)) for x in [h, *(row[i] for row in rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(str(h).rjust(w) for h, w in zip(headers, widths))]
    lines += ["  ".join(str(v).rjust(w) for v, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def cmd_bench(args: argparse.Namespace) -> None:
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1" and not args.any_threads:
        # One BLAS thread, like one Lambda vCPU and like the targets; set before numpy loads.
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join(sys.path)}
        raise SystemExit(subprocess.call([sys.executable, "-m", "mcp_client", *sys.argv[1:]], env=env))
    sizes = [300, 2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    dims = [64] if args.quick else [int(d) for d in args.dims.split(",")]
    queries = 20 if args.quick else args.queries
    results = []
    started = time.time()
    from .progress import Progress

    with tempfile.TemporaryDirectory(prefix="capsule-bench-") as tmp, \
            Progress("bench (configurations)", len(dims) * len(sizes)) as bar:
        for dim in dims:
            for n in sizes:
                if bar.mode == "off":
                    print(f"... N={n} dim={dim}", file=sys.stderr, flush=True)
                results.append(run_one(n, dim, queries, 1 if args.quick else args.cold_runs, Path(tmp),
                                       external=not args.no_external))
                bar.advance()
    report = {
        "command": "capsule " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
                    "load_average": os.getloadavg(), "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")},
        "seconds": round(time.time() - started, 1),
        "results": results,
    }
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(table(results))
    skipped = {r["chromadb"]["skipped"] for r in results if "skipped" in r["chromadb"]}
    for note in skipped:
        print(f"chromadb skipped: {note}")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; JSON written to {args.out}")


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="measure ingest, cold/warm search and recall against other methods")
    p.add_argument("--quick", action="store_true", help="tiny sizes for a smoke test (seconds)")
    p.add_argument("--sizes", default="1000,10000,100000", help="comma-separated N (default 1k,10k,100k)")
    p.add_argument("--dims", default="384,1024", help="comma-separated dimensions (default 384,1024)")
    p.add_argument("--queries", type=int, default=200, help="queries per configuration")
    p.add_argument("--cold-runs", type=int, default=3, help="fresh processes per configuration")
    p.add_argument("--no-external", action="store_true", help="skip chromadb")
    p.add_argument("--any-threads", action="store_true", help="do not pin BLAS to one thread")
    p.add_argument("--out", default="capsule-bench.json", help="where to write the JSON report")
    p.set_defaults(run=cmd_bench)


if __name__ == "__main__" and len(sys.argv) == 7 and sys.argv[1] == "--cold-probe":
    print(json.dumps(cold_probe(*sys.argv[2:3], int(sys.argv[3]), *sys.argv[4:7])))
