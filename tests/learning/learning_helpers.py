"""Helpers for the learning tests: a real SQLite store, the hashing embedder, a frozen clock."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capsule.core.clock import FrozenClock
from capsule.core.errors import Unavailable
from capsule.embedders.hashing import HashingEmbedder
from capsule.jobs.scheduled import Jobs
from capsule.learning import LearningService
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from capsule.store.sqlite_learning import SQLiteLearningStore


class FlakyEmbedder:
    """The hashing embedder behind a switch: while ``down`` it raises Unavailable."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder()
        self.model_id, self.dim = self.inner.model_id, self.inner.dim
        self.down = False
        self.calls = 0

    def embed(self, texts, *, kind: str = "document") -> np.ndarray:
        self.calls += 1
        if self.down:
            raise Unavailable("the test embedder is down")
        return self.inner.embed(texts, kind=kind)


@dataclass
class World:
    store: SQLiteStore
    memories: MemoryService
    learning: LearningService
    jobs: Jobs
    embedder: FlakyEmbedder
    clock: FrozenClock

    def remember(self, project: str, content: str, tenant: str = "t", **meta) -> str:
        self.clock.advance(minutes=5)
        return self.memories.store_memory(tenant, {"project": project, "content": content, "meta": meta}).memory.id


def make_world(path) -> World:
    store = SQLiteStore(path)
    store.migrate()
    clock = FrozenClock()
    embedder = FlakyEmbedder()
    memories = MemoryService(store, embedder, clock=clock)
    learning = LearningService(SQLiteLearningStore(store), store, embedder, clock=clock)
    jobs = Jobs(store, learning, embedder, clock=clock, settings=memories.settings)
    return World(store, memories, learning, jobs, embedder, clock)


def fixpack(title: str = "Point REDIS_URL at the private host", **overrides) -> dict:
    body = {
        "title": title,
        "description": "Redis refuses connections on the public host inside the private network.",
        "category": "network",
        "component": "worker",
        "tags": ["redis"],
        "package_manager": "npm",
        "signatures": [
            {
                "text": "connect ECONNREFUSED 127.0.0.1:6379",
                "regexes": [r"ECONNREFUSED\s+\S*:6379"],
                "meta": {"min_score": 0.5, "source": "ci"},
            }
        ],
        "steps": [
            {"step_order": 2, "kind": "cmd", "payload": {"command": "npm run worker"}, "timeout_ms": 30000},
            {
                "step_order": 1,
                "kind": "patch",
                "description": "use the private host",
                "payload": {
                    "file": ".env",
                    "search": "REDIS_URL=redis://localhost",
                    "replace": "REDIS_URL=redis://redis.internal",
                },
            },
        ],
        "checks": [
            {"check_order": 1, "cmd": "redis-cli -h redis.internal ping", "expect_substring": "PONG"},
            {"check_order": 2, "cmd": "npm test", "expect_exit_code": 0, "timeout_ms": 120000},
        ],
    }
    body.update(overrides)
    return body
