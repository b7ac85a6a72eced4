"""Export and import throughput and peak memory (issue 12's numbers).

    python scripts/bench_transfer.py [N] [--dims D] [--store sqlite|mongomock] [--tracemalloc]

Seeds a fresh store with N memories (default 100000; D-dimensional vectors, default 384,
text of 30 words from a 5,000-word vocabulary, one vote on every tenth), then, each in its own process so each peak is its own: exports
them to a JSON Lines file, and imports that file into another fresh store. Prints, for
each step, memories/s and the peak resident set (VmHWM) of the process, and with
``--tracemalloc`` the peak of Python allocations too (slower: traced separately). Peaks
that stay flat as N grows are the point: neither step holds the memories.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "layers"))

import numpy as np  # noqa: E402

from capsule.core.records import MemoryRecord  # noqa: E402
from capsule.core.text import sha256  # noqa: E402
from capsule.store.sides import transfer_store  # noqa: E402
from capsule.store.transfer import FeedbackRow  # noqa: E402
from capsule.transfer import Sources, export_lines, import_lines  # noqa: E402
from capsule.transfer.format import read_lines  # noqa: E402

TENANT, PROJECT = "bench", "bench-project"


def open_store(kind: str, path: str):
    if kind == "sqlite":
        from capsule.store.sqlite import SQLiteStore

        store = SQLiteStore(path)
    else:  # mongomock keeps its data in this process: seed, export and import then share one process
        import mongomock

        from capsule.store.mongo import MongoStore

        store = MongoStore(mongomock.MongoClient().get_database(Path(path).stem), transactions=False)
    store.migrate()
    return store


def sources(store) -> Sources:
    from capsule.store.mongo import MongoStore  # noqa: F401  (only to tell the kinds apart)

    if hasattr(store, "path"):
        from capsule.store.sqlite_learning import SQLiteLearningStore

        learning = SQLiteLearningStore(store)
    else:
        from capsule.store.mongo_learning import MongoLearningStore

        learning = MongoLearningStore(store.db)
    learning.migrate()
    return Sources(store, learning, transfer_store(store))


def seed(store, n: int, dims: int) -> None:
    rng = np.random.default_rng(7)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    transfer = transfer_store(store)
    # Text from a vocabulary of 5,000 words, as real notes repeat their words: the tokenizer's
    # word caches (bounded at 262,144 words) then stay small, as they do on real text.
    vocabulary = [f"w{n}" for n in range(5000)]
    for first in range(0, n, 2000):
        records = []
        for i in range(first, min(n, first + 2000)):
            vector = rng.standard_normal(dims).astype(np.float32)
            at = start + timedelta(seconds=i)
            words = rng.choice(vocabulary, size=24)
            content = f"the deploy failed because {' '.join(words)}; fixed by setting REDIS_URL"
            records.append(
                MemoryRecord(
                    id=f"m{i:09d}",
                    tenant=TENANT,
                    project=PROJECT,
                    content=content,
                    sha256=sha256(content),
                    occurred_at=at,
                    created_at=at,
                    updated_at=at,
                    embedding=vector / np.linalg.norm(vector),
                    model=f"bench-{dims}",
                    meta={"component": "api", "tags": ["redis"]},
                    helpful=int(i % 10 == 0),
                )
            )
        transfer.put_memories(TENANT, PROJECT, records)
        votes = [FeedbackRow(r.id, True, "bench", r.created_at) for r in records if r.helpful]
        transfer.put_feedback(TENANT, votes)


def peak_rss_mb() -> float:
    """This process's peak resident set. VmHWM, not ru_maxrss: Linux carries ru_maxrss across
    exec, so a child would report its parent's peak (the seeding) as its own."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


def step(kind: str, action: str, store_path: str, file: str, traced: bool) -> dict:
    """One measured step, in this process."""
    if traced:
        import tracemalloc

        tracemalloc.start()
    store = open_store(kind, store_path)
    began = time.perf_counter()
    if action == "export":
        with open(file, "w", encoding="utf-8") as out:
            for line in export_lines(sources(store), TENANT):
                out.write(line)
    else:
        with open(file, "rb") as handle:
            result = import_lines(sources(store), TENANT, read_lines(handle), source=file)
        assert result.refused_total == 0 and result.complete, result.explanation
    seconds = time.perf_counter() - began
    out = {"seconds": seconds, "rss_mb": peak_rss_mb()}
    if traced:
        out["traced_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    return out


def child(kind: str, action: str, store_path: str, file: str, traced: bool) -> dict:
    args = [sys.executable, __file__, "--step", action, "--store", kind, "--db", store_path, "--file", file]
    done = subprocess.run(args + (["--tracemalloc"] if traced else []), capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--store", choices=["sqlite", "mongomock"], default="sqlite")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--step", choices=["export", "import"])
    parser.add_argument("--db")
    parser.add_argument("--file")
    args = parser.parse_args()
    if args.step:
        print(json.dumps(step(args.store, args.step, args.db, args.file, args.tracemalloc)))
        return
    if args.store != "sqlite":
        raise SystemExit(
            "--store mongomock keeps data in one process; the bench measures separate processes: "
            "run tests/transfer for mongomock"
        )
    folder = tempfile.mkdtemp(prefix="capsule-transfer-bench-")
    try:
        run(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # a 100k run leaves over 1 GB


def run(args: argparse.Namespace, folder: str) -> None:
    source, target, file = f"{folder}/source.db", f"{folder}/target.db", f"{folder}/export.jsonl"
    began = time.perf_counter()
    seed(open_store(args.store, source), args.n, args.dims)
    print(f"seeded {args.n} memories ({args.dims}-d) in {time.perf_counter() - began:.1f}s")
    for action, path in (("export", source), ("import", target)):
        measured = child(args.store, action, path, file, False)
        line = (
            f"{action}: {args.n / measured['seconds']:,.0f} memories/s ({measured['seconds']:.1f}s), "
            f"peak RSS {measured['rss_mb']:.0f} MB"
        )
        if args.tracemalloc:
            if action == "import":
                os.remove(target)
                for suffix in ("-wal", "-shm"):
                    Path(target + suffix).unlink(missing_ok=True)
            traced = child(args.store, action, path, file if action == "import" else file + ".traced", True)
            line += f", peak Python allocations {traced['traced_mb']:.1f} MB (tracemalloc)"
        print(line)
    size = os.path.getsize(file)
    print(f"export file: {size / 2**20:.0f} MB, {size / args.n:,.0f} bytes per memory")


if __name__ == "__main__":
    main()
