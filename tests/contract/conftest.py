"""The store backends the contract suite runs against.

Every backend in ``BACKENDS`` gets the same tests. A backend that cannot run here (a real
MongoDB without ``CAPSULE_TEST_MONGODB_URI``) is skipped with its reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest


def _sqlite(tmp_path) -> Iterator:
    from capsule.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "contract.db")
    store.migrate()
    yield store
    store.close()


def _mongomock(tmp_path) -> Iterator:
    mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
    from capsule.store.mongo import MongoStore

    client = mongomock.MongoClient()
    store = MongoStore(client.get_database("contract"), transactions=False)
    store.migrate()
    yield store
    store.close()
    client.close()


def _mongomock_strict(tmp_path) -> Iterator:
    """mongomock with the transaction path (enforced sessions) and every query checked against
    the declared indexes (strict_mongo.py)."""
    mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
    from strict_mongo import StrictDatabase, TxnClient  # beside this conftest (rootdir-relative import)

    from capsule.store.mongo import INDEXES, MongoStore

    client = TxnClient(mongomock.MongoClient())
    store = MongoStore(StrictDatabase(client, client._mock.get_database("contract"), INDEXES), transactions=True)
    store.migrate()
    yield store
    client.close()


def _mongodb(tmp_path) -> Iterator:
    uri = os.environ.get("CAPSULE_TEST_MONGODB_URI")
    if not uri:
        pytest.skip("set CAPSULE_TEST_MONGODB_URI to run the contract suite against a real MongoDB")
    import pymongo

    from capsule.store.mongo import MongoStore

    client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000, tz_aware=True)
    name = f"capsule_contract_{uuid.uuid4().hex[:12]}"  # a database per test, dropped after
    store = MongoStore(client.get_database(name))
    store.migrate()
    yield store
    client.drop_database(name)
    client.close()


BACKENDS: dict[str, Callable] = {
    "sqlite": _sqlite,
    "mongomock": _mongomock,
    "mongomock-strict": _mongomock_strict,
    "mongodb": _mongodb,
}


@pytest.fixture
def backends() -> dict[str, Callable]:
    """BACKENDS, for a test module choosing its own (a fixture: ``from conftest import`` names
    whichever conftest was imported first when several test folders are run together)."""
    return BACKENDS


@pytest.fixture(params=sorted(BACKENDS))
def store(request, tmp_path):
    yield from BACKENDS[request.param](tmp_path)
