"""Warm search CPU (thread time) and wall, p50/p95, over databases ``ingest_rate.py --keep``
made: one project of 100k, and 100k spread over 100 projects searched with ``global``.

    python scripts/scale/global_vs_one.py both|one|global DIR [N, default 100000] [QUERIES, default 40]

With more queries the CPU p50 of each third of them is printed too: a fresh process maps the
pages its searches touch as it goes, so the first hundreds are slower than the rest.
"""

import sys
import time
from pathlib import Path

import numpy as np

from capsule_cli.bench_data import LOCAL_TENANT, PROJECT, make_dataset, service_for


def measure(db, data, req, count):
    svc = service_for(db, data, snapshots=True)
    t = time.perf_counter()
    svc.search(LOCAL_TENANT, {**req, "query": data.query_texts[0], "k": 10})
    first = time.perf_counter() - t
    svc.settle()
    for q in data.query_texts[:3]:
        svc.search(LOCAL_TENANT, {**req, "query": q, "k": 10})
    cpu = []
    wall = []
    for q in data.query_texts[:count]:
        c, t = time.thread_time(), time.perf_counter()
        svc.search(LOCAL_TENANT, {**req, "query": q, "k": 10})
        cpu.append((time.thread_time() - c) * 1000)
        wall.append((time.perf_counter() - t) * 1000)
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    svc.store.close()
    out = {
        "first_s": round(first, 2),
        "p50_wall": round(float(np.median(wall)), 2),
        "p50_cpu": round(float(np.median(cpu)), 2),
        "p95_cpu": round(float(np.percentile(cpu, 95)), 2),
    }
    out.update({k: round(int(status[k].split()[0]) / 1024) for k in ("VmRSS", "RssAnon", "RssFile") if k in status})
    if count >= 300:
        out["p50_cpu_by_third"] = [
            round(float(np.median(cpu[i * count // 3 : (i + 1) * count // 3])), 2) for i in range(3)
        ]
    return out


which = sys.argv[1]
folder = Path(sys.argv[2])
N = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
Q = int(sys.argv[4]) if len(sys.argv) > 4 else 40
if which in ("one", "both"):
    d = make_dataset(N, 1024, Q, seed=1)
    print(f"one project {N}", measure(folder / f"ing-{N}-1.db", d, {"project": PROJECT}, Q), flush=True)
if which in ("global", "both"):
    d = make_dataset(N, 1024, Q, seed=N + 1024)
    print(f"global 100x{N // 100}", measure(folder / f"glob-{N}-100-1024.db", d, {"global": True}, Q), flush=True)
