"""``capsule bench --ops``: the CPU cost of every single operation by the size of the data (issue 32).

For each size N: a fresh SQLite store seeded with N memories by the bench's bulk path
(:func:`capsule_cli.bench.ingest`, one project), and for the largest size also the same N over
``--global-projects`` projects (the operations then run in one of them). Then, in this process,
through :class:`~capsule.service.memory_service.MemoryService` with the hashing embedder (its vectors named as
the seeded ones, so the stored and the seeded memories share an index), each operation a number
of times on a warm service: its median CPU time (``time.process_time``, not wall time: the
machine is shared) and that median's ratio to the same operation at the smallest size.

Operations: store, ingest of 10 chunks, get, list page, pin, forget, restore, update, feedback,
export page, retention run, mining run (after a new failure: the tenant read whole, a page at a
time), mining run with nothing changed since the last (capsule.jobs.scheduled reads no memory then); and
the mining run's peak memory (one more run after a change, under tracemalloc). Prints a table,
and the JSON report holds it.

Every size is measured alike: each single operation (and ingest, list page) first runs
:data:`WARMUP` times uncounted, then ``--op-runs`` times on other memories picked by the same
stride over the project; each row also gives the median read syscalls of a run (the pages
SQLite's own cache did not hold). With ``--workdir`` the seeded databases are kept in its
``seeds`` folder and reused by later runs (:func:`seed`): a million memories seed once. Each
size is measured in a process of its own and seeded in another (:func:`_apart`).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .bench_data import LOCAL_TENANT, PROJECT, ingest, make_dataset

DIM = 384  # the hashing embedder's default
OPS = (
    "store",
    "ingest10",
    "get",
    "list_page",
    "pin",
    "forget",
    "restore",
    "update",
    "feedback",
    "export_page",
    "retention",
    "mining",
    "mining_unchanged",
)
EXPORT_PAGE_BYTES = 256 * 1024  # one page the same size at every N (the handler's 4 MB is a whole 1k export)
SINGLE = ("store", "get", "pin", "forget", "restore", "update", "feedback")  # single-memory operations
WARMUP = 3  # runs of each single operation (and ingest, list page) before the counted ones, at every size


class BenchHashing:
    """The hashing embedder under the seeded vectors' model name (``bench-{dim}``)."""

    def __init__(self, dim: int = DIM) -> None:
        from capsule.embedders.hashing import HashingEmbedder

        self.inner = HashingEmbedder(dim)
        self.dim, self.model_id = dim, f"bench-{dim}"

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        return self.inner.embed(texts, kind=kind)


def _chunks_text(i: int) -> str:
    """A text the ingest splits into ten chunks (paragraphs of distinct words)."""
    return "\n\n".join(
        f"Section {i}-{c}. " + " ".join(f"w{(i * 7 + c * 131 + w * w) % 5000}" for w in range(600)) for c in range(10)
    )


def _read_calls() -> int | None:
    """This process's read syscalls so far (Linux; None elsewhere): a page SQLite's own cache
    lacks is a ``pread`` of the file (or of the WAL), counted in the process's CPU time."""
    try:
        with open("/proc/self/io") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("syscr:"))
    except (OSError, StopIteration):
        return None


def _cpu_ms(
    fn: Callable[[int], Any], count: int, before: Callable[[int], Any] | None = None, *, warm: int = 0
) -> tuple[list[float], list[int]]:
    """CPU ms of each of ``count`` calls of ``fn`` after ``warm`` calls not counted (the ``i``
    goes on from them), and the read syscalls of each; ``before`` runs ahead of each, not counted."""
    samples, reads = [], []
    for i in range(warm + count):
        if before is not None:
            before(i)
        calls = _read_calls()
        start = time.process_time()
        fn(i)
        cpu = (time.process_time() - start) * 1000
        after = _read_calls()
        if i >= warm:
            samples.append(cpu)
            if calls is not None and after is not None:
                reads.append(after - calls - 1)  # less /proc/self/io's own read
    return samples, reads


def peak_mib(fn: Callable[[], Any]) -> float:
    """The most memory ``fn`` held at once, in MiB, as Python and numpy allocate it (tracemalloc:
    what a run adds, not the process's resident size, which the seeded data and the index fill)."""
    tracemalloc.start()
    try:
        fn()
        return round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    finally:
        tracemalloc.stop()


def measure(
    n: int, projects: int, workdir: Path, repeats: int, job_repeats: int, seeds: Path | None = None
) -> dict[str, Any]:
    from capsule.config import Settings
    from capsule.runtime.learning import build_jobs
    from capsule.service.memory_service import MemoryService
    from capsule.store.sqlite import SQLiteStore
    from capsule.transfer import open_sources
    from capsule.transfer.export import export_page

    started = time.perf_counter()
    db = workdir / f"ops-{n}-{projects}.db"
    seeded = seed(db, n, projects, seeds)
    project = PROJECT if projects == 1 else "p0"
    # The seeded ids of the project the operations run in (memory i is in project p{i % projects}).
    ids = [f"m{i:07d}" for i in range(0, n, projects)]
    store = SQLiteStore(db)
    store.migrate()  # a kept seed made by an older schema (a no-op otherwise)
    settings = Settings(data_dir=db.parent, retention_limit=1_000_000, query_cache_entries=0)
    service = MemoryService(store, BenchHashing(), settings=settings)
    service.set_project_settings(LOCAL_TENANT, project, {"retention_limit": "unlimited"})  # no evictions at 1M
    jobs = build_jobs(service)
    sources = open_sources(service)
    for k in range(20):  # failures for the mining run to find (two recurring errors)
        service.store_memory(
            LOCAL_TENANT,
            {
                "project": project,
                "meta": {"type": "error"},
                "content": (
                    f"error {k}: sqlite database is locked after timeout in worker"
                    if k % 2
                    else f"error {k}: token signature expired at the gateway"
                ),
            },
        )
    # Warm: the project's index loaded and its vectors all read, the statements prepared.
    service.store_memory(LOCAL_TENANT, {"project": project, "content": "warm up the bench's project"})
    service.search(LOCAL_TENANT, {"project": project, "query": "warm", "k": 10})
    service.settle()
    service.get(LOCAL_TENANT, ids[0])
    # Each run of an operation on another memory, spread over the project by the same stride at
    # every size; the first WARMUP runs of each single operation are not counted (at every size alike).
    runs = repeats + WARMUP
    picks = [ids[(k * 7919) % len(ids)] for k in range(1, 4 * runs + 1)]
    picks = list(dict.fromkeys(picks))
    runs = min(runs, len(picks) // 4)  # a small project: fewer distinct ids than the ops want
    forget_ids, pin_ids, update_ids, other = (picks[k * runs : (k + 1) * runs] for k in range(4))
    texts = [_chunks_text(i) for i in range(runs)]  # made ahead: the ingest's cost, not the bench's
    ops: dict[str, Callable[[int], Any]] = {
        "store": lambda i: service.store_memory(
            LOCAL_TENANT,
            {"project": project, "content": f"ops bench store {n} {projects} {i}: retry the lock after timeout {i}"},
        ),
        "ingest10": lambda i: service.ingest(LOCAL_TENANT, {"project": project, "text": texts[i]}),
        "get": lambda i: service.get(LOCAL_TENANT, other[i]),
        "list_page": lambda i: service.list_memories(LOCAL_TENANT, {"project": project}),
        "pin": lambda i: service.pin(LOCAL_TENANT, pin_ids[i]),
        "forget": lambda i: service.forget(LOCAL_TENANT, forget_ids[i]),
        "restore": lambda i: service.restore(LOCAL_TENANT, forget_ids[i]),
        "update": lambda i: service.history.update(
            LOCAL_TENANT, update_ids[i], {"content": f"updated {n} {i} {update_ids[i]}"}
        ),
        "feedback": lambda i: service.feedback(LOCAL_TENANT, other[i], {"helpful": i % 2 == 0}),
        "export_page": lambda i: export_page(sources, LOCAL_TENANT, project, None, max_bytes=EXPORT_PAGE_BYTES),
        "retention": lambda i: jobs.run("retention"),
        "mining": lambda i: jobs.run("mining"),
        "mining_unchanged": lambda i: jobs.run("mining"),
    }
    # A mining run reads a tenant again only when it changed (capsule.jobs.scheduled): "mining" runs after a
    # new failure each time (the whole tenant read), "mining_unchanged" after nothing (its marks).
    before: dict[str, Callable[[int], Any]] = {
        "mining": lambda i: service.store_memory(
            LOCAL_TENANT,
            {
                "project": project,
                "meta": {"type": "error"},
                "content": f"error {n} {i}: sqlite database is locked again",
            },
        )
    }
    out: dict[str, Any] = {
        "n": n,
        "projects": projects,
        "project_memories": len(ids),
        "seed": {
            "seconds": seeded["seconds"],
            "memories_per_s": seeded["memories_per_s"],
            "memories_per_cpu_s": seeded.get("memories_per_cpu_s"),
            "kept_seed": "kept_seed" in seeded,  # copied from --workdir's seeds, seeded by an earlier run
        },
        "ops": {},
    }
    checks: dict[str, Any] = {}
    for name in OPS:
        job = name in ("retention", "mining", "mining_unchanged", "export_page")
        warm = 0 if job or runs <= 2 * WARMUP else WARMUP  # a tiny project (--quick) has too few ids
        count = job_repeats if job else runs - warm
        last: list[Any] = []
        samples, reads = _cpu_ms(
            lambda i, last=last, name=name: last.append(ops[name](i)), count, before.get(name), warm=warm
        )
        if name == "ingest10":
            checks["ingest_chunks"] = last[-1].chunks
        elif name == "export_page":
            checks["export_page_bytes"] = len(last[-1].text)
        elif name == "mining":
            checks["mining_scanned"] = last[-1].counts.get("scanned")
        elif name == "list_page":
            checks["list_page_items"] = len(getattr(last[-1], "memories", None) or getattr(last[-1], "items", []))
        median = statistics.median(samples)
        row = {"cpu_ms": round(median, 3), "min_cpu_ms": round(min(samples), 3), "runs": count, "warmup": warm}
        if reads:  # read syscalls per run (pages SQLite's cache did not hold), median
            row["read_calls"] = statistics.median(reads)
        if name == "store":
            row["per_cpu_s"] = round(1000 / median) if median else None
        if name == "ingest10":  # chunks stored per CPU-second
            row["per_cpu_s"] = round(1000 * last[-1].chunks / median) if median else None
        out["ops"][name] = row
    # Mining reads the tenant a page at a time: its peak is one page and the kept failures at any
    # size (issue 32's target: within 1.5x from 10k to 1M). One more run, traced (slower).
    before["mining"](job_repeats)
    out["ops"]["mining"]["peak_mib"] = peak_mib(lambda: jobs.run("mining"))
    out["checks"] = checks
    store.close()
    service = jobs = sources = None  # freed before the collection (not `del`: the lambdas above read them)
    gc.collect()
    for path in workdir.glob(f"ops-{n}-{projects}.db*"):
        path.unlink(missing_ok=True)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def seed(db: Path, n: int, projects: int, seeds: Path | None) -> dict[str, Any]:
    """``db`` seeded with ``n`` memories over ``projects``. With ``seeds`` (``--workdir``) the
    seeded file is kept there (``seed-{n}-{projects}.db`` and its ingest figures beside it) and a
    later run copies it instead of seeding again (a million memories take minutes to seed); the
    operations always run on a copy, so the kept seed stays as seeded."""
    if seeds is None:
        return _seeded_apart(db, n, projects)
    kept, figures = seeds / f"seed-{n}-{projects}.db", seeds / f"seed-{n}-{projects}.json"
    if not (kept.exists() and figures.exists()):
        seeds.mkdir(parents=True, exist_ok=True)
        part = seeds / f"{kept.name}.part"
        for path in seeds.glob(f"{part.name}*"):
            path.unlink()
        result = _seeded_apart(part, n, projects)  # closed: its WAL checkpointed into the file and removed
        part.replace(kept)
        for path in seeds.glob(f"{part.name}-*"):
            path.unlink(missing_ok=True)
        figures.write_text(json.dumps(result))
    shutil.copyfile(kept, db)
    return {**json.loads(figures.read_text()), "kept_seed": str(kept)}


def _apart(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """``fn(*args)`` in a new process of its own (spawned: nothing of this one's memory).

    Each size is measured in a fresh process and seeded in another: measured in one process
    after the smaller sizes (or after seeding), the same 1M operations on the same file cost
    1.2-2.9x more CPU with the same read syscalls each (get 0.149 ms instead of 0.054; pin
    0.71 instead of 0.37): the cost of a process's memory after gigabytes were made and freed
    in it, not of the store's size (bench-results/bench-ops-1k-1m.json's note)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def _seeded_apart(db: Path, n: int, projects: int) -> dict[str, Any]:
    """:func:`_ingest` in a process of its own (:func:`_apart`), whether the seed is kept or made."""
    return _apart(_ingest, db, n, projects)


def _ingest(db: Path, n: int, projects: int) -> dict[str, Any]:
    return {**ingest(db, make_dataset(n, DIM, 1, seed=n + DIM), projects=projects), "seeded_by_pid": os.getpid()}


def label(result: dict[str, Any]) -> str:
    return f"{result['n']:,}" + ("" if result["projects"] == 1 else f" / {result['projects']}p")


def with_ratios(results: list[dict[str, Any]]) -> None:
    """Each operation's CPU as a multiple of its CPU at the first (smallest) size."""
    base = results[0]["ops"]
    for result in results:
        for name, row in result["ops"].items():
            first = base[name]["cpu_ms"]
            row["ratio"] = round(row["cpu_ms"] / first, 2) if first else None


def table(results: list[dict[str, Any]]) -> str:
    headers = ["operation", *(f"{label(r)} CPU ms" for r in results), *(f"{label(r)} ratio" for r in results[1:])]
    rows = []
    for name in OPS:
        cells = [
            name,
            *(f"{r['ops'][name]['cpu_ms']:.3f}" for r in results),
            *(f"{r['ops'][name]['ratio']:.2f}x" for r in results[1:]),
        ]
        rows.append(cells)
    for name, key, text in (
        ("store", "per_cpu_s", "stores per CPU-s"),
        ("ingest10", "per_cpu_s", "ingested chunks per CPU-s"),
        ("mining", "peak_mib", "mining peak MiB (traced)"),
    ):
        rows.append([text, *(str(r["ops"][name].get(key)) for r in results), *("" for _ in results[1:])])
    widths = [max(len(str(x)) for x in [h, *(row[i] for row in rows)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(headers, widths)))]
    lines += ["  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(row, widths))) for row in rows]
    return "\n".join(lines)


def cmd_ops(args: argparse.Namespace) -> None:
    sizes = [200, 2000] if args.quick else [int(s) for s in (args.sizes or "1000,100000").split(",")]
    sizes = sorted(sizes)
    plan = [(n, 1) for n in sizes]
    if args.global_projects > 1 and sizes[-1] >= 10 * args.global_projects:
        plan.append((sizes[-1], args.global_projects))
    started = time.time()
    results = []
    seeds = Path(args.workdir) / "seeds" if args.workdir else None  # kept seeded databases (see seed)
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="capsule-bench-ops-", dir=args.workdir) as tmp:
        for n, projects in plan:
            print(f"... ops at N={n} over {projects} project(s)", file=sys.stderr, flush=True)
            results.append(_apart(measure, n, projects, Path(tmp), args.op_runs, args.job_runs, seeds))
            Path(args.out).write_text(json.dumps({"partial": True, "ops": results}, indent=2))
    with_ratios(results)
    report = {
        "command": "capsule " + " ".join(sys.argv[1:]),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "load_average": os.getloadavg(),
        },
        "embedder": f"hashing-v1-{DIM} (as bench-{DIM})",
        "seconds": round(time.time() - started, 1),
        "ops_table": {
            label(r): {name: {k: r["ops"][name][k] for k in ("cpu_ms", "ratio")} for name in OPS} for r in results
        },
        "ops": results,
    }
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(table(results))
    print(
        f"CPU ms per operation (median of {args.op_runs}; export, retention, mining {args.job_runs}); ratio to "
        f"N={sizes[0]:,}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
        f"JSON written to {args.out}"
    )
