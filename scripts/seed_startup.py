"""A data folder holding one 10,000-memory project embedded with the default MiniLM model, for
the start-up measurements in docs/operations.md ("Start-up"):

    python scripts/seed_startup.py DATA_DIR [--memories 10000] [--project startup]

The memories are short English notes (seeded, so every run makes the same folder), embedded in
batches by the real offline embedder and inserted through the store in batches of 1,000; the
project's retention limit is raised so that later ``capsule store`` runs evict nothing.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

SUBJECTS = [
    "the checkout service",
    "the SQLite store",
    "the login page",
    "the nightly job",
    "the search API",
    "the billing worker",
    "the upload handler",
    "the cache layer",
    "the CI pipeline",
    "the mobile client",
]
EVENTS = [
    "timed out under load",
    "deadlocked on concurrent writes",
    "returned stale results",
    "leaked file handles",
    "failed after the dependency upgrade",
    "ran out of memory",
    "double-charged a customer",
    "dropped messages on restart",
    "logged secrets",
    "slowed down",
]
FIXES = [
    "use BEGIN IMMEDIATE",
    "add an index on created_at",
    "retry with jitter",
    "pin the library version",
    "stream the file in chunks",
    "close the connection in a finally block",
    "raise the pool size",
    "move the work to a queue",
    "redact tokens before logging",
    "cache the parsed config",
]


def notes(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(EVENTS)}; fix: {rng.choice(FIXES)} "
        f"(ticket {rng.randrange(100, 10_000)}, seen {i})"
        for i in range(n)
    ]


def seed(data_dir: Path, n: int, project: str, first_id: int = 0) -> None:
    from capsule.config import Settings
    from capsule.core.records import MemoryRecord
    from capsule.core.text import sha256
    from capsule.embedders.minilm import MiniLMEmbedder
    from capsule.runtime.service import build_service

    settings = Settings(data_dir=data_dir, embedder="minilm")
    data_dir.mkdir(parents=True, exist_ok=True)
    service = build_service(settings)
    service.set_retention_limit("local", project, {"retention_limit": max(2 * n, 1000)})
    embedder = MiniLMEmbedder()
    texts = notes(n)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    start = time.perf_counter()
    for first in range(first_id, n, 1000):
        batch = texts[first : first + 1000]
        vectors = embedder.embed(batch)
        records = [
            MemoryRecord(
                id=f"seed{first + i:07d}",
                tenant="local",
                project=project,
                content=text,
                sha256=sha256(text),
                occurred_at=base + timedelta(minutes=first + i),
                created_at=base + timedelta(minutes=first + i),
                updated_at=base + timedelta(minutes=first + i),
                embedding=vectors[i],
                model=embedder.model_id,
            )
            for i, text in enumerate(batch)
        ]
        service.store.insert(records, limit=2 * n, dedupe_after=None, actor="seed")
        print(f"{first + len(batch)} memories, {time.perf_counter() - start:.0f} s", flush=True)
    service.store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--project", default="startup")
    parser.add_argument("--first", type=int, default=0, help="continue an interrupted run from this memory")
    args = parser.parse_args()
    seed(args.data_dir, args.memories, args.project, args.first)


if __name__ == "__main__":
    main()
