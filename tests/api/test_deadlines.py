"""Slow dependencies give the documented fallback or a 503 inside the invocation's time.

The slow cluster is a real loopback socket that accepts connections and never answers, behind
the real pymongo driver with the store's own client options (5 s server selection, 10 s per
operation): without the request's deadline a call waits those out. The slow embedder is the real
VoyageEmbedder around a client that does not answer. Sleeps are bounded and released at teardown.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from capsule.config import Settings
from capsule.core import deadline
from capsule.core.clock import FrozenClock
from capsule.core.errors import Unavailable
from capsule.embedders import HashingEmbedder
from capsule.embedders.remote import VoyageEmbedder
from capsule.service.memory_service import MemoryService
from capsule.store.sqlite import SQLiteStore
from functions import app

from .events import event

pymongo = pytest.importorskip("pymongo", reason="pymongo is in the 'mongo' extra")

T0 = datetime(2026, 3, 1, tzinfo=UTC)
OWN_TIMEOUT_S = 5.0  # mongo_client.CLIENT_OPTIONS serverSelectionTimeoutMS: what a call waits without a deadline


@dataclass
class Invocation:
    """A Lambda context with this much time left."""

    remaining_ms: int
    function_name: str = "capsule-test"
    aws_request_id: str = "req"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:capsule-test"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


class Silent:
    """A TCP server on loopback that accepts and never says a word (a cluster that hangs)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                continue

    def close(self) -> None:
        self.stop.set()
        for conn in self.held:
            conn.close()
        self.sock.close()


class SlowVoyage:
    """A Voyage HTTP client (capsule.embedders.http's ``post``) that answers after ``delay``
    seconds (or when released), whatever timeout it is given."""

    def __init__(self, delay: float) -> None:
        self.delay, self.release, self.calls, self.timeouts = delay, threading.Event(), 0, []

    def post(self, path, payload, *, timeout):
        self.calls += 1
        self.timeouts.append(timeout)
        self.release.wait(self.delay)
        raise RuntimeError("answered too late to matter")


@pytest.fixture
def slow_cluster():
    from capsule.store.mongo import MongoStore
    from capsule.store.mongo_client import CLIENT_OPTIONS

    server = Silent()
    client = pymongo.MongoClient(f"mongodb://127.0.0.1:{server.port}/?directConnection=true", **CLIENT_OPTIONS)
    app.set_service(
        MemoryService(
            MongoStore(client.get_database("capsule"), transactions=False), HashingEmbedder(), clock=FrozenClock(T0)
        )
    )
    yield
    app.set_service(None)
    client.close()
    server.close()


@pytest.fixture
def slow_embedder(tmp_path, monkeypatch):
    monkeypatch.setattr(deadline, "FALLBACK_RESERVE_S", 0.2)
    client = SlowVoyage(delay=10.0)
    store = SQLiteStore(tmp_path / "c.db")
    store.migrate()
    service = MemoryService(
        store,
        VoyageEmbedder("key", dim=8, client=client),
        clock=FrozenClock(T0),
        settings=Settings(data_dir=tmp_path, query_cache_entries=0),
    )
    yield service, client
    client.release.set()
    store.close()


def handler(name: str):
    import importlib

    from functions import routes

    module, _, attribute = routes.by_name(name).handler.partition(":")
    return getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("search", {"body": {"query": "q", "project": "p"}}),
        ("store", {"body": {"project": "p", "content": "c"}}),
    ],
)
def test_a_hanging_cluster_is_a_503_within_the_invocations_time(slow_cluster, name, kwargs):
    started = time.monotonic()
    response = handler(name)(event(name, **kwargs), Invocation(remaining_ms=1500))
    elapsed = time.monotonic() - started
    assert response["statusCode"] == 503, response
    # The driver's own 5 s would outlive a function with 1.5 s left; the deadline (1.0 s) ends it.
    assert elapsed < OWN_TIMEOUT_S


def test_a_slow_embedder_stores_the_memory_as_pending_in_time(slow_embedder):
    service, client = slow_embedder
    started = time.monotonic()
    with deadline.within(0.6):
        result = service.store_memory("t1", {"project": "p", "content": "sqlite deadlock"})
    assert client.calls == 1 and time.monotonic() - started < client.delay
    assert 0 < client.timeouts[0] <= 0.6 - deadline.FALLBACK_RESERVE_S  # the client is told what is left
    assert result.memory.status == "pending_embedding"
    assert "backfill job will embed it" in result.explanation


def test_a_slow_embedder_gives_a_keyword_search_in_time(slow_embedder):
    service, client = slow_embedder
    with deadline.within(0.6):
        service.store_memory("t1", {"project": "p", "content": "sqlite deadlock"})
        hits = service.search("t1", {"project": "p", "query": "sqlite deadlock"})
    assert [h.content for h in hits.results] == ["sqlite deadlock"]
    assert "Ranked by keyword only" in hits.explanation


def test_with_no_time_left_the_embedder_is_not_called(slow_embedder):
    service, client = slow_embedder
    with deadline.within(0.1):  # less than the fallback's reserve
        result = service.store_memory("t1", {"project": "p", "content": "c"})
    assert client.calls == 0 and result.memory.status == "pending_embedding"


def test_a_held_project_lease_is_waited_for_only_while_the_request_has_time():
    mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
    from capsule.core.records import MemoryRecord
    from capsule.store.mongo import MongoStore

    store = MongoStore(mongomock.MongoClient().get_database("lease"), transactions=False, lock_wait_s=10.0)
    store.migrate()
    store.projects_.insert_one(
        {"tenant": "t1", "name": "p", "lock": "other", "lock_until": time.time() + 60, "seq": 0, "version": 0}
    )
    record = MemoryRecord(
        id="a", tenant="t1", project="p", content="c", sha256="s", occurred_at=T0, created_at=T0, updated_at=T0
    )
    started = time.monotonic()
    with deadline.within(0.3), pytest.raises(Unavailable, match="busy"):
        store.insert([record], limit=10, dedupe_after=None, actor="x")
    assert time.monotonic() - started < 10.0


def test_the_deadline_nests_to_the_earlier_and_is_absent_outside_a_request():
    assert deadline.remaining() is None and deadline.budget(3.0) == 3.0
    with deadline.within(5.0):
        with deadline.within(60.0):
            assert deadline.budget(30.0) <= 5.0
        with pytest.raises(Unavailable, match="no time left"):
            deadline.budget(30.0, reserve=10.0)
    assert deadline.from_lambda_context(Invocation(remaining_ms=10_000)) == 10.0 - deadline.RESPONSE_MARGIN_S
    assert deadline.from_lambda_context(object()) is None
