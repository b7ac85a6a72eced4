# python scripts/scale/search_existing.py DB one|global DATA_DIR QUERIES
"""Measure search on an existing bench database with this tree's code: a fresh process's first
search (snapshot or SQLite), then warm p50/p95 wall and CPU, RSS. Queries: stored rows' vectors
plus noise (cosine ~0.9), texts from their first words."""

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

db, scope, data_dir, count = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
conn = sqlite3.connect(db)
total = conn.execute("select max(seq) from memories").fetchone()[0]
rng = np.random.default_rng(7)
picks = sorted(rng.integers(1, total + 1, count).tolist())
rows = [conn.execute("select content, embedding from memories where seq = ?", (s,)).fetchone() for s in picks]
conn.close()
texts = [" ".join(c.split()[:3]) + f" q{j}" for j, (c, _) in enumerate(rows)]
vecs = np.stack([np.frombuffer(e, dtype="<f4") for _, e in rows])
vecs = vecs + rng.standard_normal(vecs.shape).astype(np.float32) * (0.5 / np.sqrt(vecs.shape[1]))
vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
from capsule.config import Settings
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from capsule_cli.bench_data import LOCAL_TENANT, PROJECT, TableEmbedder
from capsule_cli.bench_scale import memory_status

req = {"global": True} if scope == "global" else {"project": PROJECT}
t0, c0 = time.perf_counter(), time.process_time()
store = SQLiteStore(db)
settings = Settings(data_dir=data_dir, retention_limit=1_000_000, query_cache_entries=0, index_snapshot_min=1)
svc = MemoryService(store, TableEmbedder(dict(zip(texts, vecs)), vecs.shape[1]), settings=settings)
svc.search(LOCAL_TENANT, {**req, "query": texts[0], "k": 10})
out = {
    "scope": scope,
    "first_search_s": round(time.perf_counter() - t0, 2),
    "first_search_cpu_s": round(time.process_time() - c0, 2),
    "memory_after_first": memory_status(),
}
t = time.perf_counter()
svc.settle()
out["settle_s"] = round(time.perf_counter() - t, 1)
for q in texts[:3]:
    svc.search(LOCAL_TENANT, {**req, "query": q, "k": 10})
wall, cpu = [], []
for q in texts:
    c, t = time.thread_time(), time.perf_counter()
    svc.search(LOCAL_TENANT, {**req, "query": q, "k": 10})
    cpu.append((time.thread_time() - c) * 1000)
    wall.append((time.perf_counter() - t) * 1000)


def pct(a, p):
    return round(float(np.percentile(a, p)), 2)


out.update(
    {
        "queries": count,
        "p50_ms": pct(wall, 50),
        "p95_ms": pct(wall, 95),
        "cpu_p50_ms": pct(cpu, 50),
        "cpu_p95_ms": pct(cpu, 95),
        "memory_after_warm": memory_status(),
    }
)
out["load_average"] = os.getloadavg()
print(json.dumps(out), flush=True)
store.close()
