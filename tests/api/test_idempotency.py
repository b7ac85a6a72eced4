"""Idempotency-Key on the writes content does not deduplicate (functions.idempotency): a retry
with the same key and body answers the first success without doing the work twice; another
body under the key is a 422 naming the header; keys are per tenant and kept for a bounded time;
the keys' store is tested on SQLite and MongoDB (mongomock) alike."""

from __future__ import annotations

import pytest

from capsule.store.idempotency import COMPLETED, IN_PROGRESS
from capsule.store.sqlite import SQLiteStore
from capsule.store.sqlite_idempotency import SQLiteIdempotencyStore
from functions import idempotency, openapi, routes

from .events import event
from .test_learning_routes import ALICE, BOB, FIXPACK


def keyed(e: dict, key: str) -> dict:
    e["headers"]["Idempotency-Key"] = key
    return e


@pytest.fixture
def memory_id(service, call) -> str:
    r = call(event("store", body={"project": "p", "content": "the deploy needs python3.12 on PATH"}))
    assert r.status == 201, r
    return r.json["memory"]["id"]


@pytest.fixture
def counted(service, monkeypatch):
    calls: list[str] = []
    real = service.feedback

    def feedback(tenant, memory_id, request):
        calls.append(memory_id)
        return real(tenant, memory_id, request)

    monkeypatch.setattr(service, "feedback", feedback)
    return calls


def test_a_retry_answers_the_first_success_without_the_work(call, memory_id, counted):
    body = {"helpful": True, "context": "fixed it"}
    first = call(keyed(event("feedback", path_params={"id": memory_id}, body=body), "k-1"))
    assert first.status == 200, first
    # The same body, its keys in another order and spaced otherwise, is the same request.
    again = call(
        keyed(
            event("feedback", path_params={"id": memory_id}, raw_body='{ "context": "fixed it", "helpful": true }'),
            "k-1",
        )
    )
    assert again.status == 200 and again.json == first.json
    assert again.raw["headers"][idempotency.REPLAYED_HEADER] == "true"
    assert counted == [memory_id]
    # Without a key, or with a new one, the work is done again.
    assert call(keyed(event("feedback", path_params={"id": memory_id}, body=body), "k-2")).status == 200
    assert call(event("feedback", path_params={"id": memory_id}, body=body)).status == 200
    assert len(counted) == 3


def test_the_same_key_for_another_request_is_a_422_naming_the_header(call, memory_id, counted):
    assert call(keyed(event("feedback", path_params={"id": memory_id}, body={"helpful": True}), "k")).status == 200
    other = call(keyed(event("feedback", path_params={"id": memory_id}, body={"helpful": False}), "k"))
    assert other.status == 422, other
    assert other.json["error"]["details"][0]["field"] == "idempotency-key"
    assert "Idempotency-Key" in other.json["error"]["message"]
    assert len(counted) == 1


@pytest.mark.parametrize("key", ["", "x" * 256, "has space", "é", "a,b"])
def test_a_bad_key_is_refused_naming_the_header(call, memory_id, counted, key):
    r = call(keyed(event("feedback", path_params={"id": memory_id}, body={"helpful": True}), key))
    assert r.status == 422, r
    assert r.json["error"]["details"][0]["field"] == "idempotency-key"
    assert counted == []


def test_keys_are_per_tenant(service, call):
    a = call(keyed(event("solution_create", tenant=ALICE, body=FIXPACK), "same"))
    b = call(keyed(event("solution_create", tenant=BOB, body=FIXPACK), "same"))
    assert a.status == b.status == 201
    assert a.json["solution"]["id"] != b.json["solution"]["id"]
    again = call(keyed(event("solution_create", tenant=ALICE, body=FIXPACK), "same"))
    assert again.json == a.json
    listed = call(event("solution_list", tenant=ALICE))
    assert [s["id"] for s in listed.json["solutions"]] == [a.json["solution"]["id"]]


def test_an_error_is_not_kept_so_a_retry_runs_again(call, counted, service):
    missing = event("feedback", path_params={"id": "mem_missing"}, body={"helpful": True})
    assert call(keyed(missing, "k")).status == 404
    assert call(keyed(event("feedback", path_params={"id": "mem_missing"}, body={"helpful": True}), "k")).status == 404
    assert len(counted) == 2


def test_a_key_still_running_answers_409_with_retry_after(service, call, memory_id, counted):
    e = keyed(event("feedback", path_params={"id": memory_id}, body={"helpful": True}), "busy")
    route = routes.by_name("feedback")
    store = idempotency.store_for(service.store)
    printed = idempotency.fingerprint(route, e, {"helpful": True})
    import time

    assert store.claim(ALICE, "busy", printed, now=time.time(), lease_s=30) is None
    r = call(e)
    assert r.status == 409 and r.json["error"]["code"] == "idempotency_in_progress"
    assert r.raw["headers"]["Retry-After"] == "1"
    assert counted == []
    # A claim whose lease has passed (its function died) is taken over.
    store.release(ALICE, "busy", printed)
    assert store.claim(ALICE, "busy", printed, now=time.time() - 60, lease_s=30) is None
    assert call(e).status == 200 and counted == [memory_id]


def test_routes_without_the_header_ignore_it(call, service):
    r1 = call(keyed(event("store", body={"project": "p", "content": "one"}), "k"))
    r2 = call(keyed(event("store", body={"project": "p", "content": "two"}), "k"))
    assert r1.status == r2.status == 201 and r1.json["memory"]["id"] != r2.json["memory"]["id"]


def test_the_header_is_declared_on_those_routes_only():
    doc = openapi.document()
    for route in routes.ROUTES:
        operation = doc["paths"][route.path][route.method.lower()]
        names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "header"]
        assert ("Idempotency-Key" in names) == (route.name in idempotency.ROUTES), route.name
        if route.name in idempotency.ROUTES:
            assert {"409", "422"} <= set(operation["responses"]), route.name


def test_every_keyed_route_is_a_write():
    names = {r.name: r for r in routes.ROUTES}
    assert idempotency.ROUTES <= set(names)
    assert all(names[n].method in ("POST", "PUT", "PATCH", "DELETE") for n in idempotency.ROUTES)


# ---- the keys' store, on both backends -------------------------------------------------

mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")


@pytest.fixture(params=["sqlite", "mongo"])
def keys(request, tmp_path):
    if request.param == "sqlite":
        db = SQLiteStore(str(tmp_path / "k.db"))
        db.migrate()
        store = SQLiteIdempotencyStore(db)
        store.migrate()
        yield store
        db.close()
    else:
        from capsule.store.mongo_idempotency import MongoIdempotencyStore

        client = mongomock.MongoClient()
        store = MongoIdempotencyStore(client.get_database("capsule_test"))
        store.migrate()
        yield store
        client.close()


def test_store_claim_complete_release_and_expiry(keys):
    now = 1_800_000_000.0
    assert keys.claim("t", "k", "f1", now=now, lease_s=30) is None
    held = keys.claim("t", "k", "f1", now=now + 1, lease_s=30)
    assert held is not None and held.status == IN_PROGRESS and held.fingerprint == "f1"
    assert keys.claim("u", "k", "f1", now=now, lease_s=30) is None  # another tenant's key
    answer = {"statusCode": 200, "headers": {"Content-Type": "application/json"}, "body": '{"a": "é"}'}
    keys.complete("t", "k", "f1", answer, now=now + 2, ttl_s=100)
    done = keys.claim("t", "k", "f2", now=now + 50, lease_s=30)
    assert done is not None and done.status == COMPLETED and done.response == answer and done.fingerprint == "f1"
    # Past its retention the key is free again.
    assert keys.claim("t", "k", "f2", now=now + 103, lease_s=30) is None
    # A release gives up only its own claim.
    keys.release("t", "k", "f1")
    assert keys.claim("t", "k", "f2", now=now + 104, lease_s=30) is not None
    keys.release("t", "k", "f2")
    assert keys.claim("t", "k", "f3", now=now + 105, lease_s=30) is None
    assert keys.purge(now + 1000) == 2  # t/k and u/k


def test_store_an_expired_claim_is_taken_over(keys):
    now = 1_800_000_000.0
    assert keys.claim("t", "k", "f1", now=now, lease_s=30) is None
    assert keys.claim("t", "k", "f2", now=now + 31, lease_s=30) is None
    held = keys.claim("t", "k", "f1", now=now + 32, lease_s=30)
    assert held is not None and held.fingerprint == "f2"


def test_the_hosted_store_keeps_keys_in_its_own_database():
    """Hosted: the keys live in the MongoDB database of the memories (mongomock), end to end."""
    from capsule.core.clock import FrozenClock
    from capsule.embedders import HashingEmbedder
    from capsule.service.memory_service import MemoryService
    from capsule.store.mongo import MongoStore
    from functions import app

    from .conftest import Called

    client = mongomock.MongoClient()
    db = client.get_database("capsule")
    store = MongoStore(db, transactions=False)
    store.migrate()
    app.set_service(MemoryService(store, HashingEmbedder(), clock=FrozenClock()))
    try:
        from functions.handlers import feedback
        from functions.handlers import store as store_handler

        context = app.LocalContext()
        made = Called(store_handler.handler(event("store", body={"project": "p", "content": "hosted"}), context))
        assert made.status == 201, made
        mid = made.json["memory"]["id"]
        vote = keyed(event("feedback", path_params={"id": mid}, body={"helpful": True}), "hosted-1")
        first = Called(feedback.handler(vote, context))
        again = Called(
            feedback.handler(
                keyed(event("feedback", path_params={"id": mid}, body={"helpful": True}), "hosted-1"), context
            )
        )
        assert first.status == again.status == 200 and first.json == again.json
        assert again.raw["headers"][idempotency.REPLAYED_HEADER] == "true"
        assert first.json["memory"]["helpful"] == 1
        (kept,) = db[idempotency_collection()].find({})
        assert kept["_id"] == {"t": ALICE, "k": "hosted-1"} and kept["status"] == COMPLETED
    finally:
        app.set_service(None)
        client.close()


def idempotency_collection() -> str:
    from capsule.store.mongo_idempotency import COLLECTION

    return COLLECTION
