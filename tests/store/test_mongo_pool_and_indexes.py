"""A small pool per Lambda container, and the learning store's indexes created once per schema version."""

from __future__ import annotations

import pytest

pytest.importorskip("pymongo")

from capsule.store import mongo_learning  # noqa: E402
from capsule.store.mongo_client import (  # noqa: E402
    LAMBDA_POOL_SIZE,
    connections_per_process,
    drop_clients,
    pool_options,
    shared_client,
)
from capsule.store.mongo_learning import MongoLearningStore  # noqa: E402
from capsule.store.mongo_schema import ensure_version  # noqa: E402

URI = "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=100"  # no server: the client connects lazily


def test_a_lambda_container_keeps_a_pool_of_two_and_the_uri_wins():
    assert pool_options(URI, {"AWS_LAMBDA_FUNCTION_NAME": "capsule-search"}) == {
        "maxPoolSize": LAMBDA_POOL_SIZE,
        "maxIdleTimeMS": 60_000,
        "maxConnecting": 1,
        "serverMonitoringMode": "poll",
    }
    assert pool_options(URI, {}) == {"maxPoolSize": 10, "maxIdleTimeMS": 60_000}  # pymongo's own monitoring
    given = "&maxPoolSize=5&maxIdleTimeMS=1000&maxConnecting=2&serverMonitoringMode=stream"
    assert pool_options(URI + given, {"AWS_LAMBDA_FUNCTION_NAME": "x"}) == {}


def test_a_warm_container_holds_five_connections_on_atlas_three_to_the_primary():
    # Atlas's replica set has 3 members; one polling monitor each, and the pool to the primary.
    assert connections_per_process(3, LAMBDA_POOL_SIZE, "poll") == (5, 3)
    assert connections_per_process(3, 10, "stream") == (16, 12)  # capsule serve


def test_the_shared_client_uses_the_small_pool_in_lambda(monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "capsule-search")
    try:
        client = shared_client(URI)
        assert client.options.pool_options.max_pool_size == LAMBDA_POOL_SIZE
        assert client.options.pool_options.max_idle_time_seconds == 60
        assert client.options.pool_options.max_connecting == 1
        assert client.options.pool_options.min_pool_size == 0  # nothing opened before it is needed
        assert client.options.server_monitoring_mode == "poll"
        assert shared_client(URI + "&maxPoolSize=7").options.pool_options.max_pool_size == 7
    finally:
        drop_clients()


@pytest.fixture
def db():
    mongomock = pytest.importorskip("mongomock")
    client = mongomock.MongoClient()
    yield client.get_database("schema")
    client.close()


def test_the_learning_indexes_are_created_once_per_schema_version(db, monkeypatch):
    MongoLearningStore(db).migrate()
    assert db["meta"].find_one({"_id": "learning_schema"})["version"] == mongo_learning.SCHEMA_VERSION
    assert len(db["solutions"].index_information()) == 4  # _id and three of ours ((tenant, id) unique)
    db["solutions"].drop_indexes()
    MongoLearningStore(db).migrate()  # a cold start at the same version: no index calls
    assert set(db["solutions"].index_information()) - {"_id_"} == set()
    monkeypatch.setattr(mongo_learning, "SCHEMA_VERSION", mongo_learning.SCHEMA_VERSION + 1)
    MongoLearningStore(db).migrate()  # a new version creates them again
    assert len(db["solutions"].index_information()) == 4
    assert db["meta"].find_one({"_id": "learning_schema"})["version"] == mongo_learning.SCHEMA_VERSION


def test_an_older_process_never_lowers_the_recorded_version(db):
    ran = []
    assert ensure_version(db, "k", 3, lambda: ran.append(3)) is True
    assert ensure_version(db, "k", 2, lambda: ran.append(2)) is False
    assert ran == [3] and db["meta"].find_one({"_id": "k"})["version"] == 3
