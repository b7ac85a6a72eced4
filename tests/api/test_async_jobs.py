"""Asynchronous jobs at the handlers (functions.async_jobs): ``Prefer: respond-async`` or a
request over the synchronous budget is validated, kept and answered 202 with a Location; the
job, run by the worker, records the very answer the synchronous route gives; GET /v1/jobs/{id}
shows it to its submitter only. The hosted dispatcher's invoke is checked with botocore's Stubber."""

from __future__ import annotations

import json

import pytest

from capsule.store.async_jobs import FAILED, QUEUED, SUCCEEDED
from functions import async_jobs, job_worker

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
ASYNC = {"Prefer": "respond-async"}


class Recorder:
    """A dispatcher that keeps what it was handed; the test runs the jobs itself."""

    def __init__(self, fail: bool = False) -> None:
        self.handed: list[tuple[str, str]] = []
        self.fail = fail

    def dispatch(self, tenant: str, job_id: str) -> None:
        if self.fail:
            raise RuntimeError("the worker function is not there")
        self.handed.append((tenant, job_id))


@pytest.fixture
def jobs(service):
    recorder = Recorder()
    async_jobs.set_dispatcher(recorder)
    yield recorder
    async_jobs.set_dispatcher(None)


def preferring(e: dict, prefer: str = "respond-async") -> dict:
    e["headers"]["Prefer"] = prefer
    return e


def poll(call, job_id: str, tenant: str | None = ALICE, authorizer: dict | None = None):
    return call(event("job_get", path_params={"id": job_id}, tenant=tenant, authorizer=authorizer))


INGEST = {"project": "p", "text": "The deploy needs python3.12 on PATH.\n\nThe cache lives in /var/cache/app."}


def test_prefer_respond_async_answers_202_then_the_job_answers_what_the_route_would(call, jobs):
    accepted = call(preferring(event("ingest", body=INGEST)))
    assert accepted.status == 202, accepted
    job_id = accepted.json["id"]
    assert accepted.raw["headers"]["Location"] == f"/v1/jobs/{job_id}" == accepted.json["location"]
    assert accepted.raw["headers"]["Preference-Applied"] == "respond-async"
    assert accepted.json["status"] == QUEUED and accepted.json["operation"] == "ingest"
    assert jobs.handed == [(ALICE, job_id)]
    queued = poll(call, job_id)
    assert queued.status == 200 and queued.json["status"] == QUEUED and queued.json["result"] is None

    assert job_worker.run_job(ALICE, job_id) == SUCCEEDED
    done = poll(call, job_id)
    assert done.status == 200 and done.json["status"] == SUCCEEDED, done
    assert done.json["status_code"] == 201
    # The synchronous answer to the same body (deduplicated by content: the same memories).
    sync = call(event("ingest", body=INGEST))
    assert sync.status == 201
    assert done.json["result"]["ids"] == sync.json["ids"] == sync.json["deduplicated"]
    assert set(done.json["result"]) == set(sync.json) and done.json["result"]["chunks"] == sync.json["chunks"]
    # Run again (a second worker, a retry): nothing to do.
    assert job_worker.run_job(ALICE, job_id) is None


def test_without_prefer_and_under_the_budget_the_route_answers_at_once(call, jobs):
    r = call(event("ingest", body=INGEST))
    assert r.status == 201 and r.json["chunks"] == 1
    assert jobs.handed == []


def test_over_the_budget_a_request_becomes_a_job_without_asking(call, jobs, monkeypatch):
    monkeypatch.setattr(async_jobs, "SYNC_INGEST_CHUNKS", 0)
    r = call(event("ingest", body=INGEST))
    assert r.status == 202 and len(jobs.handed) == 1, r


def test_a_bad_request_is_refused_at_once_and_nothing_is_queued(call, jobs, service):
    r = call(preferring(event("ingest", body={"project": "p", "text": "x", "colour": "red"})))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "colour", r
    r = call(preferring(event("import_data", raw_body='{"kind": "memory"}\n')))
    assert r.status == 422 and "line 1" in r.json["error"]["message"], r
    r = call(preferring(event("detect_patterns", body={"min_occurrences": "2"})))
    assert r.status == 422, r
    assert jobs.handed == []
    store = async_jobs.store_for(service.store)
    assert store.pending(now=4e9, limit=10) == []


def test_another_principal_or_tenant_gets_the_404_of_a_missing_job(call, jobs):
    job_id = call(preferring(event("ingest", body=INGEST))).json["id"]
    for tenant in (BOB,):
        other = poll(call, job_id, tenant=tenant)
        assert other.status == 404, other
    missing = poll(call, "job_nothing")
    assert missing.status == 404 and other.json["error"]["code"] == missing.json["error"]["code"]
    # Another API key of the same tenant, limited: not its job.
    key = {"lambda": {"tenant": ALICE, "key": "bot", "scope": json.dumps({"projects": ["p"]})}}
    assert poll(call, job_id, tenant=None, authorizer=key).status == 404
    # The tenant's full, unscoped key sees every job of the tenant.
    owner = {"lambda": {"tenant": ALICE, "key": "owner"}}
    assert poll(call, job_id, tenant=None, authorizer=owner).status == 200


def test_a_job_of_an_import_and_of_mining(call, jobs):
    assert call(event("ingest", body=INGEST)).status == 201
    from functions.app import LocalContext
    from functions.handlers import export

    exported = export.handler(event("export", query={"project": "p"}), LocalContext())
    assert exported["statusCode"] == 200
    accepted = call(preferring(event("import_data", raw_body=exported["body"])))
    assert accepted.status == 202, accepted
    assert job_worker.run_job(ALICE, accepted.json["id"]) == SUCCEEDED
    mined = call(preferring(event("detect_patterns", body={"min_occurrences": 2})))
    assert mined.status == 202, mined
    assert job_worker.run_job(ALICE, mined.json["id"]) == SUCCEEDED
    done = poll(call, mined.json["id"])
    assert done.json["status_code"] == 200 and "patterns" in done.json["result"], done
    # The synchronous route, asked the same, answers the same document.
    assert call(event("detect_patterns", body={"min_occurrences": 2})).json == done.json["result"]


def test_a_failed_run_records_the_route_s_error(call, jobs, service, monkeypatch):
    accepted = call(preferring(event("ingest", body=INGEST)))
    from capsule.core.errors import Unavailable

    def down(*args, **kwargs):
        raise Unavailable("the store is down")

    monkeypatch.setattr(service, "ingest", down)
    assert job_worker.run_job(ALICE, accepted.json["id"]) == FAILED
    done = poll(call, accepted.json["id"])
    assert done.json["status"] == FAILED and done.json["status_code"] == 503
    assert done.json["error"]["code"] == "unavailable", done


def test_a_dispatch_that_fails_answers_503_and_the_job_is_failed_not_started(call, service):
    async_jobs.set_dispatcher(Recorder(fail=True))
    try:
        r = call(preferring(event("ingest", body=INGEST)))
    finally:
        async_jobs.set_dispatcher(None)
    assert r.status == 503 and r.raw["headers"]["Retry-After"], r
    store = async_jobs.store_for(service.store)
    assert store.pending(now=4e9, limit=10) == []


def test_without_a_worker_the_request_runs_synchronously(call, service):
    assert async_jobs.dispatcher() is None
    r = call(preferring(event("ingest", body=INGEST)))
    assert r.status == 201, r


def test_an_idempotent_retry_gets_the_same_job(call, jobs):
    e = preferring(event("detect_patterns", body={"min_occurrences": 2}))
    e["headers"]["Idempotency-Key"] = "mine-1"
    first = call(e)
    e2 = preferring(event("detect_patterns", body={"min_occurrences": 2}))
    e2["headers"]["Idempotency-Key"] = "mine-1"
    again = call(e2)
    assert first.status == again.status == 202 and first.json["id"] == again.json["id"]


@pytest.mark.parametrize(
    ("header", "wanted"),
    [("respond-async", True), ("wait=10, respond-async", True), ("Respond-Async; x=1", True), ("wait=5", False)],
)
def test_prefer_tokens(header, wanted):
    assert async_jobs.prefers_async({"headers": {"prefer": header}}) is wanted


def test_the_hosted_dispatcher_invokes_the_worker_with_the_tenant_and_id_only():
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("lambda", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
    stub = Stubber(client)
    stub.add_response(
        "invoke",
        {"StatusCode": 202},
        {"FunctionName": "capsule-jobs", "InvocationType": "Event", "Payload": b'{"tenant": "t", "job": "job_1"}'},
    )
    with stub:
        async_jobs.LambdaDispatcher("capsule-jobs", client).dispatch("t", "job_1")
    stub.assert_no_pending_responses()


def test_the_worker_function_runs_a_job(call, jobs):
    accepted = call(preferring(event("ingest", body=INGEST)))
    from functions.app import LocalContext

    answer = job_worker.handler({"tenant": ALICE, "job": accepted.json["id"]}, LocalContext())
    assert answer == {"job": accepted.json["id"], "status": SUCCEEDED}
    assert job_worker.handler({"job": "x"}, LocalContext()) == {"status": "refused"}


def test_the_stored_request_keeps_no_credentials():
    e = event("ingest", body=INGEST)
    e["headers"].update({"authorization": "AWS4-HMAC-SHA256 ...", "x-capsule-byok": "k", "prefer": "respond-async"})
    kept = async_jobs.stored_request(e)
    assert set(kept["headers"]) == {"content-type"}
    assert kept["requestContext"]["authorizer"]["iam"]["userArn"] == ALICE


def test_a_poll_hands_over_again_a_job_whose_worker_died(call, jobs, service):
    import time

    accepted = call(preferring(event("ingest", body=INGEST)))
    job_id = accepted.json["id"]
    store = async_jobs.store_for(service.store)
    # A worker claimed it, then died: its lease is long past.
    assert store.claim(ALICE, job_id, now=time.time() - 2 * async_jobs.LEASE_S, lease_s=async_jobs.LEASE_S)
    polled = poll(call, job_id)
    assert polled.json["status"] == "running"
    assert jobs.handed == [(ALICE, job_id), (ALICE, job_id)]
    assert job_worker.run_job(ALICE, job_id) == SUCCEEDED  # the second attempt takes it over
    assert poll(call, job_id).json["status"] == SUCCEEDED
    assert len(jobs.handed) == 2  # a job done is not handed over again


def test_a_job_whose_worker_died_twice_is_failed(call, jobs, service):
    import time

    accepted = call(preferring(event("ingest", body=INGEST)))
    job_id = accepted.json["id"]
    store = async_jobs.store_for(service.store)
    for n in range(async_jobs.MAX_ATTEMPTS):
        long_ago = time.time() - (3 - n) * async_jobs.LEASE_S
        assert store.claim(ALICE, job_id, now=long_ago, lease_s=async_jobs.LEASE_S)
    assert job_worker.run_job(ALICE, job_id) == FAILED
    done = poll(call, job_id)
    assert done.json["status_code"] == 503 and "stopped 2 times" in done.json["error"]["message"], done


def test_hosted_jobs_live_in_the_memories_mongodb_database():
    """Hosted: a job is kept, run and read back in the MongoDB database of the memories (mongomock)."""
    mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
    from capsule.core.clock import FrozenClock
    from capsule.embedders import HashingEmbedder
    from capsule.service.memory_service import MemoryService
    from capsule.store.mongo import MongoStore
    from capsule.store.mongo_async_jobs import COLLECTION
    from functions import app
    from functions.handlers import ingest, job_get

    client = mongomock.MongoClient()
    db = client.get_database("capsule")
    store = MongoStore(db, transactions=False)
    store.migrate()
    app.set_service(MemoryService(store, HashingEmbedder(), clock=FrozenClock()))
    recorder = Recorder()
    async_jobs.set_dispatcher(recorder)
    try:
        context = app.LocalContext()
        accepted = ingest.handler(preferring(event("ingest", body=INGEST)), context)
        assert accepted["statusCode"] == 202, accepted
        job_id = json.loads(accepted["body"])["id"]
        (kept,) = db[COLLECTION].find({})
        assert kept["_id"] == {"t": ALICE, "j": job_id} and kept["status"] == QUEUED
        assert "authorization" not in kept["request"].lower()
        assert job_worker.run_job(ALICE, job_id) == SUCCEEDED
        polled = job_get.handler(event("job_get", path_params={"id": job_id}), context)
        view = json.loads(polled["body"])
        assert view["status"] == SUCCEEDED and view["status_code"] == 201 and view["result"]["chunks"] == 1
    finally:
        async_jobs.set_dispatcher(None)
        app.set_service(None)
        client.close()


def test_a_job_is_counted_once_as_the_request_that_made_it(call, jobs, service):
    from functions import metering

    accepted = call(preferring(event("ingest", body=INGEST)))
    assert job_worker.run_job(ALICE, accepted.json["id"]) == SUCCEEDED
    meter = metering.meter_for(service)
    assert meter is not None
    meter.flush()
    [hour] = meter.store.hours(ALICE, 0, 2**35)
    assert hour.operations == {"ingest": 1}
