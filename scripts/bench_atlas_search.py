"""Per-search cost of a large hosted project: operations, bytes read, peak memory, time.

    .venv/bin/python scripts/bench_atlas_search.py 10000 100000 [1000000] [--dim 1024]

One tenant's project of N memories on the fake Atlas cluster (scripts/atlas_fake.py: exact
$vectorSearch, $search with Lucene's BM25 over the Atlas Search index (analyzed when the index is
built, before the first search), every other read of the memories refused), searched
through the whole service as a search Lambda runs it: MongoStore with the stack's threshold
(5,000), the embedder behind the store's cache (which on Atlas keeps no query's vector: a
search writes nothing), the hybrid ranking. Measured per search:

- operations and reply bytes: a pymongo CommandListener (the fake publishes each round trip with
  its BSON reply, batched as a server batches);
- peak memory: tracemalloc over the search call (the function's allocations, plus the fake
  cluster's scratch: a few arrays of one value per memory, ~25 MB at 1M, as it scores every
  memory exactly where Atlas walks an HNSW graph);
- time: the whole call, and the call less the time spent inside the fake cluster.

"hits on topic" is a sanity check of the vector half only: the synthetic keywords also occur
at random in other topics' memories. The memories are synthetic: 1,000 topics, each memory a unit vector near its topic's and about
60 words (~430 bytes) of text; the matrix is held as float16 past 10^8 values to fit the machine
(the cluster's storage, not what it returns: replies carry float32 vectors as Atlas does).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "layers")]

import mongomock  # noqa: E402

from capsule.config import Settings  # noqa: E402
from capsule.core.clock import FrozenClock  # noqa: E402
from capsule.embedders.base import normalize  # noqa: E402
from capsule.embedders.cached import CachedEmbedder  # noqa: E402
from capsule.service.memory_service import MemoryService  # noqa: E402
from capsule.store.mongo import MongoStore  # noqa: E402
from scripts.atlas_fake import FakeAtlasDatabase, OperationCounter  # noqa: E402

T0 = datetime(2026, 3, 1, tzinfo=UTC)
TOPICS, VOCAB, WORDS = 1000, 5000, 60
THRESHOLD = 5_000  # infra/stack.py StackOptions.vector_search_min


class SyntheticCorpus:
    """N memories of one tenant's project, as columns; documents built on demand."""

    def __init__(self, n: int, dim: int, seed: int = 7) -> None:
        rng = np.random.default_rng(seed)
        self.n, self.dim = n, dim
        self.centers = normalize(rng.standard_normal((TOPICS, dim)).astype(np.float32))
        self.topic = rng.integers(0, TOPICS, n)
        dtype = np.float16 if n * dim > 100_000_000 else np.float32
        self._matrix = np.empty((n, dim), dtype=dtype)
        for at in range(0, n, 50_000):
            part = slice(at, min(n, at + 50_000))
            noise = rng.standard_normal((part.stop - at, dim)).astype(np.float32) * (0.6 / np.sqrt(dim))
            self._matrix[part] = normalize(self.centers[self.topic[part]] + noise)
        self.vocab = [f"w{v}" for v in range(VOCAB)]
        # Each memory: two words of its topic, then Zipf-distributed common words.
        self.words = np.minimum(rng.zipf(1.3, (n, WORDS)), VOCAB - 1).astype(np.int16)
        self.words[:, 0] = (self.topic * 2) % VOCAB
        self.words[:, 1] = (self.topic * 2 + 1) % VOCAB
        self.model = f"bench-{dim}"
        self._columns = {
            "tenant": np.full(n, "bench", dtype=object),
            "project": np.full(n, "p", dtype=object),
            "model": np.full(n, self.model, dtype=object),
            "active": np.ones(n, dtype=bool),
        }

    def columns(self):
        return self._columns

    def matrix(self):
        return self._matrix, np.ones(self.n, dtype=bool)

    def vector(self, row: int) -> np.ndarray:
        return self._matrix[row].astype(np.float32)

    def content(self, row: int) -> str:
        return "topic " + " ".join(self.vocab[w] for w in self.words[row])

    def doc(self, row: int) -> dict:
        at = T0.timestamp() - row * 60.0
        return {
            "id": f"m{row:07d}",
            "tenant": "bench",
            "project": "p",
            "content": self.content(row),
            "path": f"src/module_{row % 300}.py",
            "chunk_index": None,
            "chunk_count": None,
            "model": self.model,
            "sha256": f"{row:064x}",
            "occurred_at": at,
            "created_at": at,
            "updated_at": at,
            "accessed_at": None,
            "pinned": False,
            "explanation": None,
            "meta": {
                "type": "note",
                "tags": [f"t{self.topic[row] % 50}"],
                "agent": "claude-code",
                "outcome_status": "unknown",
            },
            "helpful": 0,
            "unhelpful": 0,
            "deleted_at": None,
            "deleted_reason": None,
            "status": "ready",
            "seq": row,
            "active": True,
            "version": 1,
        }

    def term_rows(self, word: str):
        if not word.startswith("w") or not word[1:].isdigit() or int(word[1:]) >= VOCAB:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        counts = np.zeros(self.n, dtype=np.int64)
        for at in range(0, self.n, 65_536):  # in blocks: the cluster's scratch stays small
            counts[at : at + 65_536] = (self.words[at : at + 65_536] == int(word[1:])).sum(axis=1)
        rows = np.flatnonzero(counts)
        return rows, counts[rows]


class TopicEmbedder:
    """Queries land near their topic's centre, as a real model's would near related memories."""

    def __init__(self, corpus: SyntheticCorpus) -> None:
        self.corpus, self.model_id, self.dim = corpus, corpus.model, corpus.dim

    def embed(self, texts, *, kind="document"):
        topics = [int(t.split()[1]) for t in texts]  # "topic N ..."
        return self.corpus.centers[topics].copy()


def measure(n: int, dim: int, queries: int) -> dict:
    started = time.perf_counter()
    corpus = SyntheticCorpus(n, dim)
    counter = OperationCounter()
    client = mongomock.MongoClient()
    db = FakeAtlasDatabase(client.get_database("bench"), corpus, [counter])
    store = MongoStore(db, transactions=False, vector_search_min=THRESHOLD)
    store.migrate()
    store.ensure_vector_index(dim)
    db.memories.build_search_indexes()
    db["projects"].insert_one(
        {"tenant": "bench", "name": "p", "version": 1, "purged_version": 0, "memories": n, "seq": n, "updated_at": 0.0}
    )
    service = MemoryService(
        store,
        CachedEmbedder(TopicEmbedder(corpus), store, FrozenClock(T0)),
        clock=FrozenClock(T0),
        settings=Settings(query_cache_entries=0),
    )
    built = time.perf_counter() - started
    rows = []
    for q in range(queries):
        topic = int(corpus.topic[q * 7919 % n])
        request = {"project": "p", "k": 8, "query": f"topic {topic} {corpus.vocab[(topic * 2) % VOCAB]}"}
        if q == queries - 1:
            request["mode"] = "bm25"
        for traced in (False, True):
            counter.reset()
            if traced:
                tracemalloc.start()
            start = time.perf_counter()
            result = service.search("bench", request)
            elapsed = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1] if traced else 0
            if traced:
                tracemalloc.stop()
                rows[-1]["peak"] = peak
                continue
            hit_topics = [corpus.topic[int(h.id[1:])] for h in result.results]
            rows.append(
                {
                    "ops": counter.operations,
                    "bytes": counter.reply_bytes,
                    "seconds": elapsed,
                    "function_s": elapsed - counter.seconds,
                    "commands": list(counter.commands),
                    "on_topic": sum(t == topic for t in hit_topics),
                    "mode": request.get("mode", "hybrid"),
                }
            )
    client.close()
    return {"n": n, "dim": dim, "build_s": built, "rows": rows}


def report(result: dict) -> None:
    rows = result["rows"]
    print(f"\n{result['n']:,} memories, {result['dim']}-d (corpus built in {result['build_s']:.0f} s)")
    for r in rows:
        print(
            f"  {r['mode']:<6} ops {r['ops']} ({', '.join(r['commands'])}), read {r['bytes'] / 2**20:.2f} MiB, "
            f"peak {r['peak'] / 2**20:.1f} MiB, {r['seconds'] * 1000:.0f} ms "
            f"({r['function_s'] * 1000:.0f} ms outside the cluster), {r['on_topic']}/8 hits on topic"
        )
    print(
        f"  max: ops {max(r['ops'] for r in rows)}, read {max(r['bytes'] for r in rows) / 2**20:.2f} MiB, "
        f"peak {max(r['peak'] for r in rows) / 2**20:.1f} MiB, median "
        f"{statistics.median(r['seconds'] for r in rows) * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[10_000, 100_000])
    parser.add_argument("--dim", type=int, default=1024, help="embedding dimensions (Voyage: 1024)")
    parser.add_argument("--queries", type=int, default=4)
    args = parser.parse_args()
    for n in args.sizes:
        report(measure(n, args.dim, args.queries))


if __name__ == "__main__":
    main()
