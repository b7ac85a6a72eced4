"""The embedded store's WAL under sustained writers: how large it grows, and how long a restart
takes after it (issue 31, deliverable 4).

Starts W writer processes that store memories one after another through the library (as the
workers of ``capsule serve`` do) and R reader processes that search meanwhile, for S seconds,
sampling the size of ``capsule.db-wal`` every 0.1 s. Then, with every process gone, opens the
store afresh (what ``capsule serve`` does as it starts) and times it until its first read.
``--no-truncate`` runs the same load with the truncating checkpoint off (the behaviour before
it: PASSIVE checkpoints only), for the comparison.

    .venv/bin/python scripts/wal_growth.py /tmp/wal-growth --writers 16 --readers 2 --seconds 60
    .venv/bin/python scripts/wal_growth.py /tmp/wal-growth --writers 16 --readers 2 --seconds 60 --no-truncate
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT)]

from capsule.config import Settings  # noqa: E402
from capsule.runtime.service import build_service  # noqa: E402
from capsule.store import sqlite_connection  # noqa: E402
from capsule_cli.loadtest import LOCAL_TENANT, search_request, store_request  # noqa: E402


def _service(folder: str, truncate: bool):
    if not truncate:
        sqlite_connection.WAL_TRUNCATE_BYTES = 1 << 62
    return build_service(Settings.from_env(data_dir=Path(folder), embedder="hashing"))


def writer(folder: str, number: int, seconds: float, truncate: bool, start, out) -> None:
    service = _service(folder, truncate)
    rng = random.Random(number)
    service.store_memory(LOCAL_TENANT, store_request(rng, -1 - number)[2])
    start.wait()
    done, stop = 0, time.monotonic() + seconds
    while time.monotonic() < stop:
        service.store_memory(LOCAL_TENANT, store_request(rng, number * 10_000_000 + done)[2])
        done += 1
    out.put({"stores": done, "truncations": service.store.truncations})
    service.store.close()


def reader(folder: str, number: int, seconds: float, truncate: bool, start, out) -> None:
    service = _service(folder, truncate)
    rng = random.Random(1000 + number)
    start.wait()
    done, stop = 0, time.monotonic() + seconds
    while time.monotonic() < stop:
        service.search(LOCAL_TENANT, search_request(rng, done)[2])
        done += 1
    out.put({"searches": done})
    service.store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--no-truncate", action="store_true", help="PASSIVE checkpoints only (as before)")
    args = parser.parse_args()
    folder = Path(args.folder) / ("passive" if args.no_truncate else "truncate")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    _service(str(folder), True).store.close()  # the schema, made once
    context = multiprocessing.get_context("spawn")
    start, out = context.Barrier(args.writers + args.readers + 1), context.Queue()
    procs = [
        context.Process(target=writer, args=(str(folder), n, args.seconds, not args.no_truncate, start, out))
        for n in range(args.writers)
    ]
    procs += [
        context.Process(target=reader, args=(str(folder), n, args.seconds, not args.no_truncate, start, out))
        for n in range(args.readers)
    ]
    for p in procs:
        p.start()
    start.wait()
    wal = folder / "capsule.db-wal"
    largest, samples = 0, []
    began = time.monotonic()
    while any(p.is_alive() for p in procs) and time.monotonic() - began < args.seconds + 60:
        size = wal.stat().st_size if wal.exists() else 0
        largest = max(largest, size)
        samples.append(size)
        time.sleep(0.1)
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    wal_after = wal.stat().st_size if wal.exists() else 0
    db = (folder / "capsule.db").stat().st_size
    opened = time.perf_counter()
    service = _service(str(folder), True)
    service.store.projects(LOCAL_TENANT)  # the first read: opening replays the WAL into its index
    restart_s = time.perf_counter() - opened
    service.store.close()
    print(
        json.dumps(
            {
                "mode": "passive only"
                if args.no_truncate
                else f"truncate past {sqlite_connection.WAL_TRUNCATE_BYTES >> 20} MiB",
                "writers": args.writers,
                "readers": args.readers,
                "seconds": args.seconds,
                "stores": sum(r.get("stores", 0) for r in results),
                "searches": sum(r.get("searches", 0) for r in results),
                "truncations": sum(r.get("truncations", 0) for r in results),
                "wal_largest_mb": round(largest / 2**20, 1),
                "wal_at_end_mb": round(wal_after / 2**20, 1),
                "db_mb": round(db / 2**20, 1),
                "restart_s": round(restart_s, 3),
                "pid": os.getpid(),
            }
        )
    )


if __name__ == "__main__":
    main()
