"""One memory per call through the whole service path (issue 2's numbers).

    python scripts/bench_service_path.py [N]        # default 10000

Stores N memories one by one through ``MemoryService.store_memory`` (validation, the
hashing embedder, the dedupe check, the retention check and one SQLite transaction each)
into a fresh database, then times 50 searches of that project. ``capsule bench`` measures
the store and the search engine alone, side by side with other methods; this measures what
a single CLI or API call costs.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

sys.path.insert(0, "layers")

from capsule.config import Settings  # noqa: E402
from capsule.embedders import HashingEmbedder  # noqa: E402
from capsule.service.memory_service import MemoryService  # noqa: E402
from capsule.store.sqlite import SQLiteStore  # noqa: E402


def main(n: int) -> None:
    folder = tempfile.mkdtemp(prefix="capsule-bench-")
    store = SQLiteStore(f"{folder}/capsule.db")
    store.migrate()
    service = MemoryService(store, HashingEmbedder(), settings=Settings(data_dir=folder, retention_limit=n))
    start = time.perf_counter()
    for i in range(n):
        service.store_memory(
            "bench",
            {
                "project": "p",
                "content": f"memory {i}: the deploy of service {i % 97} failed with E{i % 1000} after {i} retries",
            },
        )
    elapsed = time.perf_counter() - start
    print(f"store: {n} memories one at a time in {elapsed:.1f} s = {n / elapsed:,.0f} memories/s")
    queries = [f"deploy of service {i % 97} failed E{i % 1000}" for i in range(51)]
    service.search("bench", {"query": queries[0], "project": "p"})  # the first search builds the warm index
    times = []
    for query in queries[1:]:
        began = time.perf_counter()
        service.search("bench", {"query": query, "project": "p"})
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    print(
        f"search at {n} memories (warm, hybrid, hashing embedder): p50 {statistics.median(times):.2f} ms, "
        f"p95 {times[int(len(times) * 0.95) - 1]:.2f} ms"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
