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
import gc
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .bench_data import (
    LOCAL_TENANT,
    PROJECT,
    Dataset,
    K,
    exact_top,
    ingest,
    make_dataset,
    numpy_brute,
    percentiles,
    recall,
    rss_mb,
    service_for,
    timed,
)

ORIGINAL_WINDOW = 500


# ---- the store ------------------------------------------------------------------


def cold_probe(db: str, dim: int, query: str, vector_file: str, snapshots: str) -> dict[str, float]:
    """Run in a fresh process: the first search, from opening the store to the result."""
    from capsule.service import memory_service as _loaded  # noqa: F401  (imports are not the search)
    from capsule.store import sqlite as _store  # noqa: F401

    vector = np.load(vector_file)
    data = Dataset(np.zeros((0, dim), np.float32), [], vector[None, :], [query])
    start = time.perf_counter()
    service = service_for(Path(db), data, snapshots=snapshots == "1")
    service.search(LOCAL_TENANT, {"project": PROJECT, "query": query, "k": K})
    ms = (time.perf_counter() - start) * 1000
    from .bench_scale import memory_status

    rss = memory_status()
    # The vectors of a large project are read after its first search, and then its snapshot
    # is written: not part of the first search, but the probes after this one need it.
    start = time.perf_counter()
    if snapshots == "1":
        service.settle()
    return {"ms": ms, "rss_mb": rss["VmRSS"], "memory": rss, "settle_ms": (time.perf_counter() - start) * 1000}


def _probe(db: Path, data: Dataset, run: int, snapshots: bool, tmp: str) -> dict[str, float]:
    vector_file = Path(tmp) / "q.npy"
    np.save(vector_file, data.queries[run])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "capsule_cli.bench",
            "--cold-probe",
            str(db),
            str(data.vectors.shape[1]),
            data.query_texts[run],
            str(vector_file),
            "1" if snapshots else "0",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout)


def cold_searches(db: Path, data: Dataset, runs: int) -> dict[str, Any]:
    """Fresh processes: building the index from SQLite, then loading the snapshot the first wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        built = [_probe(db, data, run, False, tmp) for run in range(runs)]
        writer = _probe(db, data, 0, True, tmp)  # writes the snapshot
        loaded = [_probe(db, data, run, True, tmp) for run in range(runs)]
    return {
        **percentiles([p["ms"] for p in built]),
        "runs": runs,
        "rss_mb": max(p["rss_mb"] for p in built),
        "memory": built[-1]["memory"],
        "snapshot": {**percentiles([p["ms"] for p in loaded]), "memory": loaded[-1]["memory"]},
        # after the snapshot writer's first search: reading the rest of the vectors, then the snapshot
        "settle_ms_after_first_search": round(writer["settle_ms"], 1),
    }


# ---- the methods ----------------------------------------------------------------


def warm_hybrid(service, data: Dataset) -> dict[str, Any]:
    load_start = time.perf_counter()
    service.search(LOCAL_TENANT, {"project": PROJECT, "query": data.query_texts[0], "k": K})
    load_s = time.perf_counter() - load_start
    service.settle()  # warm: a large project's vectors, read after its first search, are all in
    complete_s = time.perf_counter() - load_start
    samples, _ = timed(
        lambda i: service.search(LOCAL_TENANT, {"project": PROJECT, "query": data.query_texts[i], "k": K}),
        len(data.query_texts),
    )
    return {
        **percentiles(samples),
        "first_search_s": round(load_s, 3),
        "complete_s": round(complete_s, 3),
        "rss_mb": rss_mb(),
    }


def warm_vector(service, data: Dataset, truth: np.ndarray) -> dict[str, Any]:
    """The vector stage alone on the warm index: first stage, exact re-scoring, top 10."""
    from capsule.core.records import Filters
    from capsule.search.hybrid import _vector_rows, _View

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
    return {
        **percentiles(samples),
        "recall@10": recall(found, truth),
        "candidates": service._options.candidates,
        "exact": service._options.exact,
    }


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
            "ORDER BY created_at DESC LIMIT ?",
            (LOCAL_TENANT, PROJECT, ORIGINAL_WINDOW),
        ).fetchall()
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
            times += timed(
                lambda i, first=first, mode=mode: service.search(
                    LOCAL_TENANT, {"project": PROJECT, "query": data.query_texts[first + i], "k": K, "mode": mode}
                ),
                count,
            )[0]
        took, picked = timed(lambda i, first=first: one(first + i), count)
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
        collection.add(
            ids=[str(i) for i in range(first, min(first + batch, len(data.vectors)))], embeddings=data.vectors[part]
        )
    build_s = time.perf_counter() - start

    def one(i: int) -> list[int]:
        answer = collection.query(query_embeddings=data.queries[i : i + 1], n_results=K, include=[])
        return [int(x) for x in answer["ids"][0]]

    samples, found = timed(one, len(data.queries))
    client.delete_collection(name)
    return {
        **percentiles(samples),
        "recall@10": recall(found, truth),
        "build_s": round(build_s, 2),
        "version": chromadb.__version__,
    }


# ---- one configuration, the table, the command -------------------------------------


def run_one(
    n: int,
    dim: int,
    queries: int,
    cold_runs: int,
    workdir: Path,
    *,
    external: bool,
    hnsw_max: int = 200_000,
    hnsw_rate: float | None = None,
    workers: int = 2,
    global_projects: int = 100,
    only_global: bool = False,
    vector_only: bool = False,
) -> dict[str, Any]:
    from . import bench_scale

    if only_global:
        return run_global(n, dim, queries, workdir, global_projects)
    if vector_only:
        return bench_scale.vector_only(n, dim, queries, workdir, workers)

    started = time.perf_counter()
    data = make_dataset(n, dim, queries, seed=n + dim)
    truth = exact_top(data.vectors, data.queries)
    db = workdir / f"bench-{n}-{dim}.db"
    out: dict[str, Any] = {"n": n, "dim": dim, "queries": queries, "data_s": round(time.perf_counter() - started, 1)}
    print(f"    data and truth in {out['data_s']} s; ingest ...", file=sys.stderr, flush=True)
    out["ingest"] = ingest(db, data)
    # Every method that needs the vectors in this process, then they are dropped: what this
    # process holds after is the service's (its RSS is reported).
    # Brute force over 4 GB takes about half a second a query: fewer queries at a million.
    brute = min(len(data.queries), 50 if n >= 500_000 else len(data.queries))
    out["numpy"] = numpy_brute(Dataset(data.vectors, data.texts, data.queries[:brute], []), truth[:brute])
    out["faiss_flat"] = bench_scale.faiss_flat(data.vectors, data.queries[:brute], truth[:brute])
    out["hnswlib"] = bench_scale.hnsw(data.vectors, data.queries, truth, max_rows=hnsw_max, rate=hnsw_rate)
    out["chromadb"] = chroma(data, truth) if external else {"skipped": "--no-external"}
    global_db = workdir / f"bench-{n}-{dim}-global.db"
    if global_projects > 1 and n >= 10 * global_projects:
        out["global_ingest"] = ingest(global_db, data, projects=global_projects)
    data.vectors = np.zeros((0, dim), np.float32)
    print("    cold probes ...", file=sys.stderr, flush=True)
    out["cold"] = cold_searches(db, data, cold_runs)
    service = service_for(db, data, snapshots=True)
    out["warm"] = warm_hybrid(service, data)
    out["warm_vector"] = warm_vector(service, data, truth)
    out["memory_after_warm"] = bench_scale.memory_status()
    exact_service = service_for(db, data, exact=True, snapshots=True)
    few = min(len(data.queries), 20 if n >= 500_000 else len(data.queries))  # exact over 4 GB: ~0.5 s each
    exact_data = Dataset(data.vectors, data.texts, data.queries[:few], data.query_texts[:few])
    exact_service.search(LOCAL_TENANT, {"project": PROJECT, "query": data.query_texts[0], "k": K})
    out["warm_vector_exact"] = warm_vector(exact_service, exact_data, truth[:few])
    out["warm_exact"] = warm_hybrid(exact_service, exact_data)
    exact_service.store.close()
    del exact_service  # its scan mapped all 4 GB of the matrix at 1M: not carried into what follows
    out["floor"] = bench_scale.floor(n, dim, service._options, bench_scale.bandwidth_gb_s())
    print("    workers ...", file=sys.stderr, flush=True)
    query_file = workdir / "queries.npz"
    np.savez(query_file, texts=np.array(data.query_texts), vectors=data.queries)
    out["workers"] = bench_scale.workers(db, dim, query_file, workers)
    out["original"] = original(db, data, truth, service)
    service.store.close()
    del service  # the global search below is measured without the one project's index beside it
    gc.collect()
    if "global_ingest" in out:
        print("    global ...", file=sys.stderr, flush=True)
        out["global"] = bench_scale.global_search(
            global_db,
            lambda: service_for(global_db, data, snapshots=True),
            data.query_texts,
            truth,
            lambda answer: [int(h.id[1:]) for h in answer.results],
            global_projects,
        )
        out["global"]["vs_one_project"] = round(out["global"]["p50_ms"] / out["warm"]["p50_ms"], 2)
        print("    global and one project in fresh processes ...", file=sys.stderr, flush=True)
        out["global_fresh"] = bench_scale.fresh_pair(db, global_db, dim, query_file)
    else:
        out["global"] = {"skipped": f"fewer than 10 memories per project over {global_projects}"}
    for path in workdir.glob(f"bench-{n}-{dim}*"):
        path.unlink(missing_ok=True)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def run_global(n: int, dim: int, queries: int, workdir: Path, projects: int) -> dict[str, Any]:
    """Only the global search over ``projects`` projects (``--only-global``: a run beside
    another measuring one project, on a machine too busy to run both in turn)."""
    from . import bench_scale

    started = time.perf_counter()
    data = make_dataset(n, dim, queries, seed=n + dim)
    truth = exact_top(data.vectors, data.queries)
    global_db = workdir / f"bench-{n}-{dim}-global.db"
    out: dict[str, Any] = {
        "n": n,
        "dim": dim,
        "queries": queries,
        "only_global": True,
        "global_ingest": ingest(global_db, data, projects=projects),
    }
    data.vectors = np.zeros((0, dim), np.float32)
    out["global"] = bench_scale.global_search(
        global_db,
        lambda: service_for(global_db, data, snapshots=True),
        data.query_texts,
        truth,
        lambda answer: [int(h.id[1:]) for h in answer.results],
        projects,
    )
    for path in workdir.glob(f"bench-{n}-{dim}*"):
        path.unlink(missing_ok=True)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def _cell(result: dict[str, Any], *path: str, fmt: str = "{:.2f}") -> str:
    value: Any = result
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return "-"
        value = value[key]
    return fmt.format(value) if isinstance(value, (int, float)) else str(value)


COLUMNS = [  # header, path in a result, format
    ("N", ("n",), "{}"),
    ("dim", ("dim",), "{}"),
    ("ingest/s", ("ingest", "memories_per_s"), "{}"),
    ("slowest 10th/s", ("ingest", "slowest_tenth_per_s"), "{}"),
    ("DB B/mem", ("ingest", "db_bytes_per_memory"), "{}"),
    ("cold p50 ms", ("cold", "p50_ms"), "{:.0f}"),
    ("snap p50 ms", ("cold", "snapshot", "p50_ms"), "{:.0f}"),
    ("hybrid p50", ("warm", "p50_ms"), "{:.2f}"),
    ("hybrid p95", ("warm", "p95_ms"), "{:.2f}"),
    ("vec p50", ("warm_vector", "p50_ms"), "{:.2f}"),
    ("vec p95", ("warm_vector", "p95_ms"), "{:.2f}"),
    ("vec R@10", ("warm_vector", "recall@10"), "{}"),
    ("floor ms", ("floor", "floor_ms"), "{:.2f}"),
    ("GB/s", ("floor", "bandwidth_gb_s"), "{}"),
    ("exact vec p50", ("warm_vector_exact", "p50_ms"), "{:.1f}"),
    ("numpy p50", ("numpy", "p50_ms"), "{:.1f}"),
    ("faiss flat p50", ("faiss_flat", "p50_ms"), "{:.1f}"),
    ("hnsw p50", ("hnswlib", "p50_ms"), "{:.2f}"),
    ("hnsw R@10", ("hnswlib", "recall@10"), "{}"),
    ("hnsw ef", ("hnswlib", "ef"), "{}"),
    ("hnsw build s", ("hnswlib", "build_s"), "{:.0f}"),
    ("global p50", ("global", "p50_ms"), "{:.1f}"),
    ("global p95", ("global", "p95_ms"), "{:.1f}"),
    ("global/one", ("global", "vs_one_project"), "{}"),
    ("fresh global p50", ("global_fresh", "global_p50_ms"), "{:.1f}"),
    ("fresh global/one", ("global_fresh", "vs_one_project"), "{}"),
    ("orig p50", ("original", "p50_ms"), "{:.1f}"),
    ("orig/warm", ("original", "speedup_hybrid"), "{:.1f}x"),
    ("orig/vec-only", ("original", "speedup_vector"), "{:.1f}x"),
    ("orig R@10", ("original", "recall@10"), "{}"),
    ("chroma p50", ("chromadb", "p50_ms"), "{:.2f}"),
    ("chroma R@10", ("chromadb", "recall@10"), "{}"),
    ("RSS MB", ("memory_after_warm", "VmRSS"), "{:.0f}"),
    ("RSS anon", ("memory_after_warm", "RssAnon"), "{:.0f}"),
    ("snap-load RSS", ("cold", "snapshot", "memory", "VmRSS"), "{:.0f}"),
    ("workers RSS", ("workers", "rss_mb_total"), "{:.0f}"),
    ("workers PSS", ("workers", "pss_mb_total"), "{:.0f}"),
]


def table(results: list[dict[str, Any]]) -> str:
    headers = [h for h, _, _ in COLUMNS]
    rows = [[_cell(r, *path, fmt=fmt) for _, path, fmt in COLUMNS] for r in results]
    widths = [max(len(str(x)) for x in [h, *(row[i] for row in rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(str(h).rjust(w) for h, w in zip(headers, widths))]
    lines += ["  ".join(str(v).rjust(w) for v, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def cmd_bench(args: argparse.Namespace) -> None:
    if args.embedders:  # the offline embedders side by side (issue 38), on every core as a service runs them
        from .bench_embedders import cmd_embedders

        return cmd_embedders(args)
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1" and not args.any_threads:
        # One BLAS thread, like one Lambda vCPU and like the targets; set before numpy loads.
        env = {
            **os.environ,
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join(sys.path),
        }
        raise SystemExit(subprocess.call([sys.executable, "-m", "capsule_cli", *sys.argv[1:]], env=env))
    if args.ops:  # the CPU cost of every single operation by size (issue 32), capsule_cli.bench_ops
        from .bench_ops import cmd_ops

        return cmd_ops(args)
    sizes = [300, 2000] if args.quick else [int(s) for s in (args.sizes or "1000,10000,100000").split(",")]
    dims = [64] if args.quick else [int(d) for d in args.dims.split(",")]
    queries = 20 if args.quick else args.queries
    results = []
    started = time.time()
    from .progress import Progress

    with (
        tempfile.TemporaryDirectory(prefix="capsule-bench-", dir=args.workdir) as tmp,
        Progress("bench (configurations)", len(dims) * len(sizes)) as bar,
    ):
        for dim in dims:
            for n in sizes:
                if bar.mode == "off":
                    print(f"... N={n} dim={dim}", file=sys.stderr, flush=True)
                rate = next(
                    (
                        r["hnswlib"].get("build_rows_per_s")
                        for r in reversed(results)
                        if r["dim"] == dim and "build_rows_per_s" in r.get("hnswlib", {})
                    ),
                    None,
                )
                results.append(
                    run_one(
                        n,
                        dim,
                        queries,
                        1 if args.quick else args.cold_runs,
                        Path(tmp),
                        external=not args.no_external,
                        hnsw_max=args.hnsw_max,
                        hnsw_rate=rate,
                        workers=args.workers,
                        global_projects=args.global_projects,
                        only_global=args.only_global,
                        vector_only=args.vector_only,
                    )
                )
                Path(args.out).write_text(json.dumps({"partial": True, "results": results}, indent=2))
                bar.advance()
    report = {
        "command": "capsule " + " ".join(sys.argv[1:]),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "load_average": os.getloadavg(),
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        },
        "seconds": round(time.time() - started, 1),
        "results": results,
    }
    from capsule.guard.bench import per_kib  # the secrets guard every stored text passes (issue 37)

    report["guard"] = per_kib()
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(table(results))
    guard = report["guard"]
    print(
        f"guard (secrets and personal data, 16 KiB texts): {guard['typical_us_per_kib']} µs per KiB typical, "
        f"{guard['worst_us_per_kib']} worst ({max(guard['us_per_kib'], key=guard['us_per_kib'].get)}); "
        "each text's in the JSON"
    )
    skipped = {r["chromadb"]["skipped"] for r in results if "skipped" in r.get("chromadb", {})}
    for note in skipped:
        print(f"chromadb skipped: {note}")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; JSON written to {args.out}")


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="measure ingest, cold/warm search and recall against other methods")
    p.add_argument("--quick", action="store_true", help="tiny sizes for a smoke test (seconds)")
    p.add_argument("--sizes", default=None, help="comma-separated N (default 1k,10k,100k; with --ops 1k,100k)")
    p.add_argument("--dims", default="384,1024", help="comma-separated dimensions (default 384,1024)")
    p.add_argument("--queries", type=int, default=200, help="queries per configuration")
    p.add_argument("--cold-runs", type=int, default=3, help="fresh processes per configuration")
    p.add_argument("--no-external", action="store_true", help="skip chromadb")
    p.add_argument(
        "--hnsw-max", type=int, default=200_000, help="largest N to build hnswlib for (above: its build time estimated)"
    )
    p.add_argument("--workers", type=int, default=2, help="service processes sharing one index (memory measured)")
    p.add_argument(
        "--global-projects",
        type=int,
        default=100,
        help="projects the same memories are spread over for the global search",
    )
    p.add_argument("--any-threads", action="store_true", help="do not pin BLAS to one thread")
    p.add_argument("--out", default="capsule-bench.json", help="where to write the JSON report")
    p.add_argument("--only-global", action="store_true", help="measure only the global search")
    p.add_argument(
        "--vector-only",
        action="store_true",
        help="only the vector stage, its index built from columns (no store, no ingest)",
    )
    p.add_argument(
        "--ops",
        action="store_true",
        help="instead: CPU per operation (store, ingest, get, ... mining) by size, ratio to the smallest",
    )
    p.add_argument(
        "--embedders",
        action="store_true",
        help="instead: the offline embedders (minilm, mpnet): load, query latency, texts/s, memory",
    )
    p.add_argument("--op-runs", type=int, default=20, help="--ops: runs of each single operation")
    p.add_argument("--job-runs", type=int, default=3, help="--ops: runs of export page, retention and mining")
    p.add_argument("--workdir", default=None, help="where the databases go (default: the temporary folder)")
    p.set_defaults(run=cmd_bench)


if __name__ == "__main__" and len(sys.argv) == 7 and sys.argv[1] == "--cold-probe":
    print(json.dumps(cold_probe(*sys.argv[2:3], int(sys.argv[3]), *sys.argv[4:7])))
