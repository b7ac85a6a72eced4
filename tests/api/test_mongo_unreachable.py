"""An unreachable MongoDB cluster is a quick 503 at the edge, through the real store and driver."""

import pytest

from capsule.core.clock import FrozenClock
from capsule.embedders import HashingEmbedder
from capsule.service.memory_service import MemoryService
from functions import app

from .events import event

pymongo = pytest.importorskip("pymongo", reason="pymongo is in the 'mongo' extra")


@pytest.fixture
def unreachable():
    from capsule.store.mongo import MongoStore

    client = pymongo.MongoClient("mongodb://127.0.0.1:9", serverSelectionTimeoutMS=100, connectTimeoutMS=100)
    app.set_service(MemoryService(MongoStore(client.get_database("capsule")), HashingEmbedder(), clock=FrozenClock()))
    yield
    app.set_service(None)
    client.close()


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("store", {"body": {"project": "p", "content": "c"}}),
        ("search", {"body": {"query": "q", "project": "p"}}),
        ("list", {"query": {"project": "p"}}),
        ("forget", {"path_params": {"id": "abc"}}),
    ],
)
def test_an_unreachable_cluster_is_503(call, unreachable, name, kwargs):
    r = call(event(name, **kwargs))
    assert r.status == 503, r
    assert r.json["error"]["code"] == "unavailable"
    assert r.json["error"]["message"].startswith("MongoDB could not")
    assert "cannot be reached" in r.json["error"]["message"]
    assert "127.0.0.1" not in r.raw["body"]  # cluster hosts never reach a caller
