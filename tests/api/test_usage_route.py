"""Per-tenant usage: the counters every admitted request feeds (functions.metering), the tenant's
rate limit (429 with Retry-After, nothing done), GET /v1/usage, the per-tenant metric, and what
counting costs in MongoDB round trips, buffered and not (the Mongo fake's command counter)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from capsule.config import Settings
from capsule.runtime.service import build_service
from capsule.service.usage_meter import Meter
from capsule.store import sides
from capsule.store.usage import HOUR_S
from functions import app, metering

from .events import event

TENANT, OTHER = "acme", "globex"
T0 = datetime(2026, 12, 4, 4, 0, 20, tzinfo=UTC).timestamp()


def _key(tenant: str = TENANT, scope: dict | None = None) -> dict:
    context = {"tenant": tenant, "key": "k"}
    if scope is not None:
        context["scope"] = json.dumps(scope)
    return {"lambda": context}


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def serving(tmp_path):
    """A service on its own data folder with the given settings, its meter on a clock the test moves."""
    made = []

    def start(clock: Clock, **settings) -> Meter:
        svc = build_service(Settings(data_dir=tmp_path / f"d{len(made)}", embedder="hashing", **settings))
        app.set_service(svc)
        made.append(svc)
        meter = Meter(
            sides.usage_store(svc.store),
            limit=svc.settings.tenant_rate_limit,
            flush_s=svc.settings.usage_flush_seconds,
            clock=clock,
        )
        meter.store.migrate()
        metering.install(svc, meter)
        return meter

    yield start
    app.set_service(None)
    for svc in made:
        svc.store.close()


def _store(call, text: str, tenant: str = TENANT):
    return call(event("store", tenant=None, authorizer=_key(tenant), body={"project": "p", "content": text}))


def _usage(call, tenant: str = TENANT, **query):
    return call(event("usage", tenant=None, authorizer=_key(tenant), query=query or None))


def test_usage_answers_the_console_shape_with_buffered_counts_once_written(serving, call):
    clock = Clock(T0)
    meter = serving(clock)
    for i in range(3):
        assert _store(call, f"memory {i}").status == 201
    r = call(event("search", tenant=None, authorizer=_key(), body={"project": "p", "query": "memory"}))
    assert r.status == 200
    assert _store(call, "theirs", OTHER).status == 201
    assert call(event("health", tenant=None, authorizer=_key())).status == 200  # not counted
    assert meter.pending() == 5
    r = _usage(call)
    assert r.status == 200, r
    assert r.json["series"] == [] and "may not show yet" in r.json["explanation"]  # buffered: not written yet
    clock.now += 60  # the next request finds the buffer due and writes it
    r = _usage(call)
    assert r.status == 200 and meter.pending() == 0
    assert list(r.json) == ["bucket", "since", "until", "rate_limit_per_minute", "series", "explanation"]
    assert r.json["bucket"] == "hour" and r.json["rate_limit_per_minute"] is None
    assert (r.json["since"], r.json["until"]) == ("2026-12-03T05:00:00Z", "2026-12-04T05:00:00Z")
    # the usage request that wrote the buffer is counted too
    assert r.json["series"] == [
        {"start": "2026-12-04T04:00:00Z", "requests": 6, "operations": {"search": 1, "store": 3, "usage": 2}}
    ]
    theirs = _usage(call, OTHER)
    assert [b["operations"] for b in theirs.json["series"]] == [{"store": 1}]


def test_day_buckets_sum_hours_and_only_buckets_with_requests_are_listed(serving, call):
    meter = serving(Clock(T0))
    day = 24 * HOUR_S
    start = int(T0 // day) * day
    meter.store.add(
        {
            (TENANT, start - day + 23 * HOUR_S, "search"): 2,
            (TENANT, start + HOUR_S, "search"): 1,
            (TENANT, start + 2 * HOUR_S, "ingest"): 4,
            (TENANT, start + 5 * day, "store"): 1,
        }
    )
    r = _usage(call, since="2026-12-01T10:00:00Z", until="2026-12-05T00:00:00+00:00", bucket="day")
    assert r.status == 200, r
    assert (r.json["since"], r.json["until"]) == ("2026-12-01T00:00:00Z", "2026-12-05T00:00:00Z")
    assert r.json["series"] == [
        {"start": "2026-12-03T00:00:00Z", "requests": 2, "operations": {"search": 2}},
        {"start": "2026-12-04T00:00:00Z", "requests": 5, "operations": {"search": 1, "ingest": 4}},
    ]
    hours = _usage(call, since="2026-12-04T00:00:00Z", until="2026-12-04T03:00:00Z")
    assert [b["start"] for b in hours.json["series"]] == ["2026-12-04T01:00:00Z", "2026-12-04T02:00:00Z"]


@pytest.mark.parametrize(
    "query, field",
    [
        ({"bucket": "week"}, "bucket"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-12-04T00:00:00Z", "until": "2026-12-04T00:00:00Z"}, "until"),
        ({"since": "2026-11-01T00:00:00Z", "until": "2026-12-04T00:00:00Z"}, "since"),  # 33 days of hours
        ({"since": "2025-01-01T00:00:00Z", "until": "2026-12-04T00:00:00Z", "bucket": "day"}, "since"),
        ({"since": "0001-01-01T00:00:00Z", "bucket": "day"}, "since"),
        ({"until": "9999-12-31T23:30:00Z", "since": "9999-12-31T23:00:00Z"}, "until"),
        ({"project": "p"}, "project"),  # an unknown parameter is refused by name
    ],
)
def test_a_bad_window_is_refused_naming_its_field(serving, call, query, field):
    serving(Clock(T0))
    r = _usage(call, **query)
    assert r.status == 422, r
    named = {d.get("field") for d in r.json["error"]["details"] or []} | {r.json["error"].get("field")}
    assert field in named or field in r.json["error"]["message"], r


def test_four_hundred_days_of_days_are_allowed(serving, call):
    serving(Clock(T0))
    r = _usage(call, since="2025-11-01T00:00:00Z", until="2026-12-04T00:00:00Z", bucket="day")
    assert r.status == 200 and r.json["series"] == [], r


def test_over_the_limit_a_request_is_refused_429_and_does_nothing(serving, call):
    clock = Clock(T0)  # 20 s into a minute
    serving(clock, tenant_rate_limit=3)
    assert [_store(call, f"memory {i}").status for i in range(3)] == [201, 201, 201]
    refused = _store(call, "one too many")
    assert refused.status == 429, refused
    assert refused.raw["headers"]["Retry-After"] == "40"
    error = refused.json["error"]
    assert error["code"] == "rate_limited" and "more than 3 requests" in error["message"]
    assert error["details"][0]["field"] == "rate_limit_per_minute" and error["details"][0]["limit"] == 3
    assert _store(call, "theirs", OTHER).status == 201  # another tenant has its own minute
    for _ in range(5):
        assert call(event("health", tenant=None, authorizer=_key())).status == 200  # health is exempt
    clock.now += 40  # the next minute
    listed = call(event("list", tenant=None, authorizer=_key(), query={"project": "p"}))
    assert listed.status == 200 and len(listed.json["memories"]) == 3  # the refused store stored nothing
    r = _usage(call)
    assert r.json["rate_limit_per_minute"] == 3 and "429" in r.json["explanation"]
    assert "may not show yet" not in r.json["explanation"]  # counted as they come: nothing buffered
    assert r.json["series"][0]["operations"] == {"store": 4, "list": 1, "usage": 1}


def test_a_refused_caller_is_not_counted(serving, call):
    meter = serving(Clock(T0))
    scoped = _key(scope={"projects": ["other"]})
    r = call(event("store", tenant=None, authorizer=scoped, body={"project": "p", "content": "x"}))
    assert r.status == 403 and meter.pending() == 0
    r = call(event("usage", tenant=None, authorizer=scoped))
    assert r.status == 403 and meter.pending() == 0  # usage is tenant-wide: a key narrowed to projects may not read it


def test_replacing_the_service_writes_what_it_buffered(tmp_path, call):
    svc = build_service(Settings(data_dir=tmp_path, embedder="hashing"))
    app.set_service(svc)
    try:
        assert _store(call, "one").status == 201
        usage = metering.meter_for(svc).store
        assert usage.hours(TENANT, 0, 2**35) == []
        app.set_service(None)  # a process stopping (functions.workers) or a service replaced
        [hour] = usage.hours(TENANT, 0, 2**35)
        assert hour.operations == {"store": 1}
    finally:
        app.set_service(None)
        svc.store.close()


def test_the_tenant_metric_is_emitted_for_costly_operations_when_enabled(serving, call, capsys, monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    serving(Clock(T0), tenant_metrics=True)
    capsys.readouterr()
    assert _store(call, "costs an embedding").status == 201
    assert call(event("list", tenant=None, authorizer=_key(), query={"project": "p"})).status == 200
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"TenantRequests"' in line]
    assert len(lines) == 1, lines  # list costs nothing: no metric
    emf = lines[0]["_aws"]["CloudWatchMetrics"][0]
    assert emf["Namespace"] == "CapsuleMemory" and {"Operation", "Tenant"} <= set(emf["Dimensions"][0])
    assert (lines[0]["Operation"], lines[0]["Tenant"], lines[0]["TenantRequests"]) == ("store", TENANT, [1.0])


def test_the_tenant_metric_is_off_by_default(serving, call, capsys, monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    serving(Clock(T0))
    capsys.readouterr()
    assert _store(call, "no metric").status == 201
    assert '"TenantRequests"' not in capsys.readouterr().out


# ---- what counting costs on MongoDB: round trips per request, from the fake's command counter ----


def _counted_mongo():
    mongomock = pytest.importorskip("mongomock", reason="mongomock is in the 'dev' extra")
    from capsule.store.mongo_usage import MongoUsageStore
    from scripts.atlas_fake import Monitored, OperationCounter, Wire

    counter = OperationCounter()
    client = mongomock.MongoClient()
    collection = Monitored(client.get_database("usage")["usage"], Wire([counter], "usage"))
    store = MongoUsageStore({"usage": collection})
    store.migrate()
    counter.reset()
    return store, counter


@pytest.mark.parametrize(
    "limit, most_per_request",
    [(0, 0.03), (600, 1.0)],
    ids=["buffered", "limited"],
)
def test_round_trips_per_request_buffered_and_limited(limit, most_per_request):
    """200 requests, one a second, one tenant: buffered (no limit) they cost a write per 60 s
    (4 in all, 0.02 a request); with a limit, one find_one_and_update each."""
    store, counter = _counted_mongo()
    clock = Clock(T0)
    meter = Meter(store, limit=limit, flush_s=60, clock=clock)
    for i in range(200):
        meter.count(TENANT, "search" if i % 2 else "store")
        clock.now += 1
    meter.flush()  # the process stops
    per_request = counter.operations / 200
    print(f"usage counting, limit={limit}: {counter.operations} round trips for 200 requests ({per_request:.3f} each)")
    assert per_request <= most_per_request
    if limit:
        assert set(counter.commands) == {"find_one_and_update"}
    [hour] = store.hours(TENANT, 0, 2**35)
    assert hour.requests == 200 and hour.operations == {"search": 100, "store": 100}
