"""CPU per service.store_memory at N memories of one project (in-process, hashing embedder), with
the dedupe look-up as it is ("after") or as it was before issue 32 ("before").

    .venv/bin/python scripts/scale/store_cost.py 20000 after
"""

import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "layers"))
from datetime import UTC, datetime, timedelta

from capsule.config import Settings
from capsule.core.records import MemoryRecord
from capsule.core.text import sha256
from capsule.embedders import HashingEmbedder
from capsule.service.memory_service import MemoryService
from capsule.store import sqlite as sq

n, mode = int(sys.argv[1]), sys.argv[2]
if mode == "before":
    sq.DEDUPE_LOOKUP = sq.DEDUPE_LOOKUP.replace("+sha256", "sha256")
d = pathlib.Path(tempfile.mkdtemp())
store = sq.SQLiteStore(d / "c.db")
store.migrate()
emb = HashingEmbedder()
t0 = datetime.now(UTC) - timedelta(hours=1)
for start in range(0, n, 5000):
    texts = [f"memory {i} about w{i % 97} and w{i % 31}" for i in range(start, min(n, start + 5000))]
    vecs = emb.embed(texts)
    store.insert_bulk(
        [
            MemoryRecord(
                id=f"m{start + j:08d}",
                tenant="local",
                project="bench",
                content=t,
                sha256=sha256(t),
                occurred_at=t0,
                created_at=t0,
                updated_at=t0,
                embedding=vecs[j],
                model=emb.model_id,
            )
            for j, t in enumerate(texts)
        ],
        limit=10**9,
        dedupe_after=None,
        actor="seed",
    )
store._conn().execute("ANALYZE")
svc = MemoryService(store, emb, settings=Settings(data_dir=d, embedder="hashing", retention_limit=10**6))
for i in range(20):
    svc.store_memory("local", {"project": "bench", "content": f"warm {i}"})
ops = 300
cpu = time.process_time()
for i in range(ops):
    svc.store_memory("local", {"project": "bench", "content": f"a new memory number {i} w{i % 13}"})
cpu = time.process_time() - cpu
print(f"{mode} N={n}: {1000 * cpu / ops:.2f} ms CPU per store, {ops / cpu:.0f} stores per CPU-second")
