"""The asynchronous jobs' store (capsule.store.async_jobs) over SQLite and MongoDB (mongomock):
create, read per tenant, one winner per claim, a lease taken over once passed, finish once,
pending for a restart, expiry and purge."""

from __future__ import annotations

import threading

import pytest

from capsule.store.async_jobs import FAILED, QUEUED, RUNNING, SUCCEEDED, Job

NOW = 1_800_000_000.0
ANSWER = {"statusCode": 201, "headers": {"Content-Type": "application/json"}, "body": '{"ids": ["é"]}'}


@pytest.fixture(params=["sqlite", "mongomock"])
def jobs(request, tmp_path):
    if request.param == "sqlite":
        from capsule.store.sqlite import SQLiteStore
        from capsule.store.sqlite_async_jobs import SQLiteJobStore

        db = SQLiteStore(tmp_path / "jobs.db")
        db.migrate()
        store = SQLiteJobStore(db)
        store.migrate()
        yield store
        db.close()
    else:
        mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
        from capsule.store.mongo_async_jobs import MongoJobStore

        client = mongomock.MongoClient()
        store = MongoJobStore(client.get_database("capsule_test"))
        store.migrate()
        yield store
        client.close()


def job(job_id: str = "job_1", tenant: str = "t", created: float = NOW) -> Job:
    request = {"rawPath": "/v1/memories/ingest", "headers": {"content-type": "application/json"}, "body": '{"a": "é"}'}
    return Job(job_id, tenant, "key:bot", "ingest", request, QUEUED, created, created + 7 * 86_400)


def test_create_and_read_per_tenant(jobs):
    jobs.create(job())
    got = jobs.get("t", "job_1", now=NOW + 1)
    assert got is not None and got.status == QUEUED and got.principal == "key:bot" and got.operation == "ingest"
    assert got.request["body"] == '{"a": "é"}' and got.created_at == NOW and got.attempts == 0
    assert jobs.get("u", "job_1", now=NOW + 1) is None  # another tenant's id is no job
    assert jobs.get("t", "job_2", now=NOW + 1) is None


def test_one_claim_wins_and_a_passed_lease_is_taken_over(jobs):
    jobs.create(job())
    claimed = jobs.claim("t", "job_1", now=NOW + 1, lease_s=60)
    assert claimed is not None and claimed.status == RUNNING and claimed.attempts == 1
    assert claimed.started_at == NOW + 1 and claimed.lease_until == NOW + 61
    assert jobs.claim("t", "job_1", now=NOW + 2, lease_s=60) is None  # held
    assert jobs.claim("u", "job_1", now=NOW + 2, lease_s=60) is None
    assert jobs.pending(now=NOW + 2, limit=10) == []
    assert jobs.pending(now=NOW + 62, limit=10) == [("t", "job_1")]
    again = jobs.claim("t", "job_1", now=NOW + 62, lease_s=60)
    assert again is not None and again.attempts == 2


def test_concurrent_claims_have_one_winner(jobs):
    jobs.create(job())
    won: list[object] = []

    def claim() -> None:
        won.append(jobs.claim("t", "job_1", now=NOW + 1, lease_s=60))

    threads = [threading.Thread(target=claim) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for w in won if w is not None) == 1


def test_finish_once_with_the_answer(jobs):
    jobs.create(job())
    jobs.claim("t", "job_1", now=NOW + 1, lease_s=60)
    assert jobs.finish("t", "job_1", status=SUCCEEDED, response=ANSWER, now=NOW + 5)
    done = jobs.get("t", "job_1", now=NOW + 6)
    assert done is not None and done.status == SUCCEEDED and done.response == ANSWER and done.finished_at == NOW + 5
    assert done.lease_until is None
    assert not jobs.finish("t", "job_1", status=FAILED, response=ANSWER, now=NOW + 7)  # already done
    assert jobs.claim("t", "job_1", now=NOW + 1000, lease_s=60) is None  # a done job is never run again
    assert jobs.pending(now=NOW + 1000, limit=10) == []


def test_a_queued_job_may_fail_before_it_starts(jobs):
    jobs.create(job())
    assert jobs.finish("t", "job_1", status=FAILED, response=ANSWER, now=NOW + 1)
    assert jobs.claim("t", "job_1", now=NOW + 2, lease_s=60) is None


def test_pending_lists_queued_jobs_oldest_first(jobs):
    jobs.create(job("job_b", created=NOW + 1))
    jobs.create(job("job_a", "u", created=NOW))
    assert jobs.pending(now=NOW + 2, limit=10) == [("u", "job_a"), ("t", "job_b")]
    assert jobs.pending(now=NOW + 2, limit=1) == [("u", "job_a")]


def test_jobs_expire_and_are_purged(jobs):
    jobs.create(job())
    jobs.create(job("job_2", created=NOW + 10))
    later = NOW + 7 * 86_400 + 1
    assert jobs.get("t", "job_1", now=later) is None
    assert jobs.claim("t", "job_1", now=later, lease_s=60) is None
    assert jobs.pending(now=later, limit=10) == [("t", "job_2")]
    assert jobs.purge(later) == 1
    assert jobs.get("t", "job_2", now=later) is not None
