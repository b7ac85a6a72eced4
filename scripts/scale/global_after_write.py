"""A global search right after each write: CPU and wall of the first global search after one
memory is bulk-inserted into a project, round after round (a different project each round),
beside the warm figure; on a database ``ingest_rate.py N 100 DIR --keep`` made.

    python scripts/scale/global_after_write.py DIR/glob-1000000-100-1024.db 1024 [ROUNDS, default 24]

Each round prints (CPU ms, wall ms, indexes read from their own postings, a sort running
beside the searches): past ``capsule.search.tenantpostings.STALE_MAX`` changed projects the tenant's
postings are sorted again on the service's index thread. It writes into the database given.
"""

import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from capsule.core.records import MemoryRecord
from capsule_cli.bench_data import LOCAL_TENANT, Dataset, service_for

db, dim = Path(sys.argv[1]), int(sys.argv[2])
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 24
rng = np.random.default_rng(1)
queries = rng.standard_normal((12, dim)).astype(np.float32)
queries /= np.linalg.norm(queries, axis=1, keepdims=True)
texts = [f"memory search index query {i}" for i in range(12)]
service = service_for(db, Dataset(np.zeros((0, dim), np.float32), [], queries, texts), snapshots=True)


def search(i: int) -> tuple[float, float]:
    cpu, wall = time.thread_time(), time.perf_counter()
    service.search(LOCAL_TENANT, {"global": True, "query": texts[i % 12], "k": 10})
    return (time.thread_time() - cpu) * 1e3, (time.perf_counter() - wall) * 1e3


search(0)
service.settle()
warm = [search(i)[0] for i in range(1, 8)]
print(f"warm global p50 {np.median(warm):.1f} ms CPU", flush=True)
now = datetime.now(UTC)
for r in range(rounds):
    vector = rng.standard_normal(dim).astype(np.float32)
    vector /= np.linalg.norm(vector)
    stamp = time.time_ns()
    service.store.insert_bulk(
        [
            MemoryRecord(
                id=f"after-write-{stamp}",
                tenant=LOCAL_TENANT,
                project=f"p{r % 100}",
                content=f"written later {r}",
                sha256=f"{stamp:064x}"[-64:],
                occurred_at=now,
                created_at=now,
                updated_at=now,
                embedding=vector,
                model=f"bench-{dim}",
            )
        ],
        limit=10_000_000,
        dedupe_after=None,
        actor="bench",
    )
    cpu, wall = search(r)
    codes = service._tenant_codes
    print(
        f"round {r + 1}: {cpu:.0f} ms CPU, {wall:.0f} ms wall, {len(codes._columns.postings.stale)} read on their own,"
        f" sorting beside: {codes._resorter._sorting}",
        flush=True,
    )
service.store.close()
