"""Stores from several processes into one SQLite file, through the library (no HTTP): what the
store path and the cross-process write coordination cost, apart from the HTTP front.

Copies a seeded data folder (made first with ``--seed N`` when it does not exist), then starts
P processes that each store R memories one at a time, as the workers of ``capsule serve`` do,
and prints stores/s, latency percentiles and CPU ms per store (all processes' CPU).

    .venv/bin/python scripts/bench_store_writers.py /tmp/bench-writers --seed 10000 --processes 2 --requests 1000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT)]

from capsule.config import Settings  # noqa: E402
from capsule.runtime.service import build_service  # noqa: E402
from capsule_cli.loadtest import LOCAL_TENANT, seed, store_request  # noqa: E402


def writer(data_dir: str, number: int, requests: int, start, out) -> None:
    service = build_service(Settings.from_env(data_dir=Path(data_dir), embedder="hashing"))
    rng = random.Random(number)
    for i in range(4):  # connections open, modules loaded
        service.store_memory(LOCAL_TENANT, store_request(rng, -1 - i - 10 * number)[2])
    start.wait()
    latencies, cpu = [], time.process_time()
    for i in range(requests):
        began = time.perf_counter()
        service.store_memory(LOCAL_TENANT, store_request(rng, number * 1_000_000 + i)[2])
        latencies.append(time.perf_counter() - began)
    cpu = time.process_time() - cpu
    lock = getattr(service.store._local, "write_lock", None)
    out.put({"latencies": latencies, "cpu": cpu, "waits": getattr(lock, "waits", None)})
    service.store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--seed", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    seeded = Path(args.folder) / f"seed-{args.seed}"
    if not (seeded / "capsule.db").exists():
        seeded.mkdir(parents=True, exist_ok=True)
        seed(Settings.from_env(data_dir=seeded, embedder="hashing"), args.seed, random.Random(7))
    work = Path(args.folder) / "work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(seeded, work)
    context = multiprocessing.get_context("spawn")
    start, out = context.Barrier(args.processes + 1), context.Queue()
    workers = [
        context.Process(target=writer, args=(str(work), n, args.requests, start, out)) for n in range(args.processes)
    ]
    for w in workers:
        w.start()
    start.wait()
    began = time.perf_counter()
    results = [out.get(timeout=600) for _ in workers]
    seconds = time.perf_counter() - began
    for w in workers:
        w.join(60)
    latencies = sorted(x for r in results for x in r["latencies"])
    total = len(latencies)

    def pct(p: float) -> float:
        return round(latencies[min(total - 1, int(p * total))] * 1000, 2)

    print(
        json.dumps(
            {
                "processes": args.processes,
                "stores": total,
                "stores_per_s": round(total / seconds, 1),
                "p50_ms": pct(0.5),
                "p95_ms": pct(0.95),
                "p99_ms": pct(0.99),
                "cpu_ms_per_store": round(sum(r["cpu"] for r in results) * 1000 / total, 2),
                "lock_waits": [r["waits"] for r in results],
            }
        )
    )


if __name__ == "__main__":
    main()
