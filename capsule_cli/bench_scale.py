"""What ``capsule bench`` measures beyond one warm process: other libraries side by side (faiss
flat, hnswlib with its build time), the physical floor of the vector stage, memory (RSS, and
PSS of workers that share one index), global search over many projects.

Each function takes the dataset and the exact top 10 it is judged against, and answers a
dict for the JSON report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

K = 10


def _percentiles(samples_ms: list[float]) -> dict[str, float]:
    from .bench_data import percentiles

    return percentiles(samples_ms)


def _recall(found, truth) -> float:
    from .bench_data import recall

    return recall(found, truth)


def memory_status(pid: int | str = "self") -> dict[str, float]:
    """Resident memory of a process in MB: all of it, and its anonymous and file-backed parts
    (file-backed: pages of mapped files, which the OS shares and can reclaim)."""
    out = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def proportional(pid: int) -> dict[str, float]:
    """PSS (each shared page divided among the processes mapping it) from smaps_rollup, in MB."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                key, _, value = line.partition(":")
                if key in ("Rss", "Pss", "Pss_Anon", "Pss_File", "Shared_Clean", "Private_Dirty"):
                    out[key] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


# ---- other libraries -----------------------------------------------------------------


def faiss_flat(vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray) -> dict[str, Any]:
    """faiss's exact inner-product index (one thread, like our stage)."""
    try:
        import faiss
    except ImportError:
        return {"skipped": "faiss is not installed"}
    faiss.omp_set_num_threads(1)
    start = time.perf_counter()
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    add_s = time.perf_counter() - start
    samples, found = [], []
    for q in queries:
        t = time.perf_counter()
        _, labels = index.search(q[None, :], K)
        samples.append((time.perf_counter() - t) * 1000)
        found.append(labels[0])
    del index
    return {
        **_percentiles(samples),
        "recall@10": _recall(found, truth),
        "add_s": round(add_s, 2),
        "version": faiss.__version__,
    }


def hnsw(
    vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray, *, max_rows: int, rate: float | None
) -> dict[str, Any]:
    """hnswlib (M 16, ef_construction 100), built with every core, searched at each ef of
    :data:`HNSW_EFS`: the figures given are of the first ef whose recall@10 reaches 0.99 (the
    recall our stage is held to), else of the last, and ``by_ef`` lists them all. Above
    ``max_rows`` the build is not run but estimated from the rate measured at a smaller size."""
    try:
        import hnswlib
    except ImportError:
        return {"skipped": "hnswlib is not installed (pip install 'capsule-memory[bench]')"}
    n, dim = vectors.shape
    if n > max_rows:
        estimate = None if rate is None else round(n / rate, 0)
        return {"skipped": f"build over {max_rows:,} rows not run (--hnsw-max)", "build_s_estimate": estimate}
    index = hnswlib.Index(space="ip", dim=dim)
    start = time.perf_counter()
    index.init_index(max_elements=n, ef_construction=100, M=16)
    index.add_items(vectors, np.arange(n), num_threads=os.cpu_count() or 1)
    build_s = time.perf_counter() - start
    index.set_num_threads(1)
    by_ef = []
    for ef in HNSW_EFS:
        index.set_ef(ef)
        samples, found = [], []
        for q in queries:
            t = time.perf_counter()
            labels, _ = index.knn_query(q[None, :], k=K)
            samples.append((time.perf_counter() - t) * 1000)
            found.append(labels[0])
        by_ef.append({"ef": ef, **_percentiles(samples), "recall@10": _recall(found, truth)})
    chosen = next((r for r in by_ef if r["recall@10"] >= 0.99), by_ef[-1])
    return {
        **chosen,
        "by_ef": by_ef,
        "build_s": round(build_s, 2),
        "build_rows_per_s": round(n / build_s),
        "threads": os.cpu_count(),
    }


HNSW_EFS = (64, 128, 256, 512)  # hnswlib's search breadth, widened until its recall matches ours


# ---- the floor -------------------------------------------------------------------------


def bandwidth_gb_s(megabytes: int = 256) -> float:
    """Memory read bandwidth of one core: a sum over an array much larger than the caches."""
    block = np.ones(megabytes << 17, dtype=np.float64)  # 8 bytes each
    block.sum()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        block.sum()
        best = min(best, time.perf_counter() - start)
    return round(block.nbytes / best / 1e9, 2)


def floor(n: int, dim: int, options, bandwidth: float) -> dict[str, Any]:
    """Bytes the vector stage reads per query and the time that takes at ``bandwidth``: the
    first pass reads the leading sign bits of every row (or all of them, below the size where
    it pays), the second the full sign bits of its survivors, the exact re-score the float32
    vectors of the candidates."""
    words = (dim + 63) // 64
    first_words = min(words, options.prefix_words) if n >= options.library_from else words
    wide = options.prefilter * options.candidates
    scanned = n * 8 * first_words + min(n, wide) * 8 * words + min(n, options.candidates) * 4 * dim
    exact = n * 4 * dim
    return {
        "bytes_per_query": scanned,
        "floor_ms": round(scanned / bandwidth / 1e6, 3),
        "exact_bytes_per_query": exact,
        "exact_floor_ms": round(exact / bandwidth / 1e6, 3),
        "bandwidth_gb_s": bandwidth,
    }


# ---- workers sharing one index ---------------------------------------------------------


def workers(db: Path, dim: int, query_file: Path, count: int, scope: str = "project") -> dict[str, Any]:
    """``count`` service processes over one database (as ``capsule serve --workers`` runs
    them), each loading the project's index (its snapshot, mapped) and searching (``scope``
    "global": every project's, with ``global: true``); their memory is read while all are
    alive: RSS each, and PSS, which counts a shared page once."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = []
    try:
        reports = []
        for _ in range(count):  # one after another: each search timed on its own
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "capsule_cli.bench_scale",
                    "--worker",
                    str(db),
                    str(dim),
                    str(query_file),
                    scope,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            procs.append(proc)
            reports.append(json.loads(proc.stdout.readline()))
        memory = [{**memory_status(p.pid), **proportional(p.pid)} for p in procs]
    finally:
        for proc in procs:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=120)
    return {
        "workers": count,
        "each": [{**r, **m} for r, m in zip(reports, memory)],
        "rss_mb_total": round(sum(m.get("VmRSS", 0) for m in memory), 1),
        "pss_mb_total": round(sum(m.get("Pss", 0) for m in memory), 1),
    }


def fresh_pair(one_db: Path, global_db: Path, dim: int, query_file: Path, turns: int = 2) -> dict[str, Any]:
    """One project and the same memories over many projects searched globally, each in a
    fresh process from its snapshots, in turns: the two sides measured alike (the global
    search of :func:`global_search` runs in the process that built every index, beside
    gigabytes it no longer reads), as a restarted server searches."""
    one, every = [], []
    for _ in range(turns):
        one.append(workers(one_db, dim, query_file, 1)["each"][0])
        every.append(workers(global_db, dim, query_file, 1, scope="global")["each"][0])
    p50 = {
        side: round(float(np.mean([r["p50_ms"] for r in runs])), 3) for side, runs in (("one", one), ("global", every))
    }
    return {
        "one": one,
        "global": every,
        "one_p50_ms": p50["one"],
        "global_p50_ms": p50["global"],
        "vs_one_project": round(p50["global"] / p50["one"], 2),
    }


def _worker(db: str, dim: str, query_file: str, scope: str) -> None:
    from capsule.config import Settings
    from capsule.service.memory_service import MemoryService
    from capsule.store.sqlite import SQLiteStore

    from .bench_data import LOCAL_TENANT, PROJECT, TableEmbedder

    saved = np.load(query_file)
    texts = [str(t) for t in saved["texts"]]
    table = dict(zip(texts, saved["vectors"]))
    settings = Settings(
        data_dir=Path(db).parent, retention_limit=1_000_000, query_cache_entries=0, index_snapshot_min=1
    )
    service = MemoryService(SQLiteStore(Path(db)), TableEmbedder(table, int(dim)), settings=settings)
    where = {"global": True} if scope == "global" else {"project": PROJECT}
    start = time.perf_counter()
    service.search(LOCAL_TENANT, {**where, "query": texts[0], "k": K})
    first_ms = (time.perf_counter() - start) * 1000
    samples = []
    for text in texts[1:]:
        t = time.perf_counter()
        service.search(LOCAL_TENANT, {**where, "query": text, "k": K})
        samples.append((time.perf_counter() - t) * 1000)
    print(json.dumps({"first_ms": round(first_ms, 1), **_percentiles(samples)}), flush=True)
    sys.stdin.read()  # alive until the parent has read its memory
    service.store.close()


# ---- global search -------------------------------------------------------------------


def global_search(
    db: Path,
    make_service: Callable[[], Any],
    texts: list[str],
    truth: np.ndarray,
    ids_of: Callable[[Any], list[int]],
    projects: int,
) -> dict[str, Any]:
    """Searches with ``global: true`` over ``projects`` projects holding the memories between
    them: the first (loads every index), then warm p50/p95 and recall@10 (vector mode)."""
    service = make_service()
    from .bench_data import LOCAL_TENANT

    start = time.perf_counter()
    service.search(LOCAL_TENANT, {"global": True, "query": texts[0], "k": K})
    first_s = time.perf_counter() - start
    service.settle()
    samples, found = [], []
    for text in texts:
        t = time.perf_counter()
        service.search(LOCAL_TENANT, {"global": True, "query": text, "k": K})
        samples.append((time.perf_counter() - t) * 1000)
        found.append(ids_of(service.search(LOCAL_TENANT, {"global": True, "query": text, "k": K, "mode": "vector"})))
    out = {
        **_percentiles(samples),
        "projects": projects,
        "first_search_s": round(first_s, 2),
        "recall@10_vector_mode": _recall(found, truth[: len(found)]),
        **memory_status(),
    }
    service.settle()  # what it writes beside the searches (int8 copies, the postings table) is there for the next
    service.store.close()
    return out


if __name__ == "__main__" and len(sys.argv) == 6 and sys.argv[1] == "--worker":
    _worker(*sys.argv[2:6])


# ---- the vector stage alone at a size the store cannot be filled to in the run ----------


def vector_only(n: int, dim: int, queries: int, workdir: Path, workers_count: int = 2) -> dict[str, Any]:
    """The vector stage of a project index at ``n`` rows, built from columns (as a store's full
    load gives them, without keyword terms) and kept as a snapshot; then fresh processes load
    the snapshot (mapped files) and search it: first search, p50/p95 and recall@10 against
    exact float32, RSS and the PSS of ``workers_count`` of them together. Beside it in this
    process: exact numpy and faiss flat over the same vectors. Ingest and hybrid search are
    not measured this way (``capsule bench`` without ``--vector-only`` runs them)."""
    from capsule.core.records import ChangeSet, IndexColumns
    from capsule.search.hybrid import SearchOptions
    from capsule.search.index import ProjectIndex, stable_key
    from capsule.search.snapshot import Snapshots

    from .bench_data import Dataset, exact_top, make_dataset, numpy_brute

    started = time.perf_counter()
    data = make_dataset(n, dim, queries, seed=n + dim)
    truth = exact_top(data.vectors, data.queries)
    out: dict[str, Any] = {
        "n": n,
        "dim": dim,
        "queries": queries,
        "vector_only": True,
        "data_s": round(time.perf_counter() - started, 1),
    }
    print(f"    data and truth in {out['data_s']} s", file=sys.stderr, flush=True)
    brute = min(queries, 50)
    out["numpy"] = numpy_brute(Dataset(data.vectors, [], data.queries[:brute], []), truth[:brute])
    out["faiss_flat"] = faiss_flat(data.vectors, data.queries[:brute], truth[:brute])
    model = f"bench-{dim}"
    ids = [f"m{i:07d}" for i in range(n)]
    times = [1.7e9 + i for i in range(n)]
    columns = IndexColumns(
        ids=ids,
        keys=[stable_key(i) for i in ids],
        vectors=data.vectors,
        vector_sizes=[4 * dim] * n,
        models=[model] * n,
        terms=[b""] * n,
        occurred=times,
        created=times,
        helpful=[0] * n,
        unhelpful=[0] * n,
        metas=[None] * n,
    )
    start = time.perf_counter()
    index = ProjectIndex("bench", "bench", model)
    index.apply(ChangeSet(version=1, columns=columns, reset=True))
    out["build_s"] = round(time.perf_counter() - start, 2)
    folder = workdir / "index"
    start = time.perf_counter()
    Snapshots(folder, "vector-only", min_rows=1).save(index)
    out["snapshot_write_s"] = round(time.perf_counter() - start, 2)
    del index, columns
    query_file = workdir / "vector-queries.npz"
    np.savez(query_file, vectors=data.queries, truth=truth)
    data.vectors = None
    out["floor"] = floor(n, dim, SearchOptions(), bandwidth_gb_s())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs, reports = [], []
    try:
        for _ in range(workers_count):
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "capsule_cli.bench_scale",
                    "--vector-worker",
                    str(folder),
                    model,
                    str(query_file),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            procs.append(proc)
            reports.append(json.loads(proc.stdout.readline()))
        memory = [{**memory_status(p.pid), **proportional(p.pid)} for p in procs]
    finally:
        for proc in procs:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=120)
    out["warm_vector"] = reports[0]
    out["workers"] = {
        "workers": workers_count,
        "each": [{**r, **m} for r, m in zip(reports, memory)],
        "rss_mb_total": round(sum(m.get("VmRSS", 0) for m in memory), 1),
        "pss_mb_total": round(sum(m.get("Pss", 0) for m in memory), 1),
    }
    for path in folder.glob("*"):
        path.unlink(missing_ok=True)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def _vector_worker(folder: str, model: str, query_file: str) -> None:
    """A fresh process: load the snapshot, then the vector stage for each query (first stage,
    exact float32 re-score of its candidates, top 10)."""
    start = time.perf_counter()
    from capsule.core.records import Filters
    from capsule.search.hybrid import SearchOptions, _vector_rows, _View
    from capsule.search.index import ProjectIndex
    from capsule.search.snapshot import Snapshots

    imports_ms = (time.perf_counter() - start) * 1000
    saved = np.load(query_file)
    queries, truth = saved["vectors"], saved["truth"]
    start, start_cpu = time.perf_counter(), time.process_time()
    index = ProjectIndex("bench", "bench", model)
    assert Snapshots(Path(folder), "vector-only", min_rows=1).load(index)
    options = SearchOptions()
    ids = np.arange(index.n)  # rows are the dataset's order

    def one(q: np.ndarray) -> np.ndarray:
        rows = _vector_rows(_View(index, index.mask(Filters())), q, options)
        scores = np.einsum("ij,j->i", index.vectors(rows), q)
        best = np.argpartition(-scores, K)[:K]
        return ids[rows[best[np.argsort(-scores[best])]]]

    found = [one(queries[0])]
    first_ms = (time.perf_counter() - start) * 1000
    first_cpu_ms = (time.process_time() - start_cpu) * 1000
    samples, cpu = [], []
    for q in queries[1:]:
        t, c = time.perf_counter(), time.thread_time()
        found.append(one(q))
        samples.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
    # CPU time of the searching thread beside the wall time: on a machine shared with other
    # work the wall time also counts the waits for a core.
    print(
        json.dumps(
            {
                "first_search_ms": round(first_ms, 1),
                "first_search_cpu_ms": round(first_cpu_ms, 1),
                "imports_ms": round(imports_ms, 1),
                **_percentiles(samples),
                "cpu": _percentiles(cpu),
                "recall@10": _recall(found, truth),
                "library_from": options.library_from,
                "prefix_words": options.prefix_words,
                "candidates": options.candidates,
                "prefilter": options.prefilter,
                **memory_status(),
            }
        ),
        flush=True,
    )
    sys.stdin.read()


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--vector-worker":
    _vector_worker(*sys.argv[2:5])
