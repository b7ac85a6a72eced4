"""Time as a query dimension: ``as_of`` is the search's now, the times a query names lift the
memories that happened then, and ``filters.since/until`` window when memories happened."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from capsule import InvalidInput

AS_OF = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)  # the clock says 2026-03-01


def remember(service, content, when, outcome="unknown", project="p"):
    return service.store_memory(
        "t", {"project": project, "content": content, "occurred_at": when, "meta": {"outcome_status": outcome}}
    ).memory.id


def search(service, query, **extra):
    return service.search("t", {"project": "p", "query": query, "k": 10, **extra})


@pytest.fixture
def history(service):
    """Fixes tried over three months, some of which worked."""
    at = lambda month, day: datetime(2026, month, day, 9, 0, tzinfo=UTC)  # noqa: E731
    return {
        "feb_pin": remember(service, "Pinning numpy below 2.0 made the wheel build pass.", at(2, 10), "success"),
        "feb_retry": remember(
            service, "Retrying the upload with backoff stopped the flaky deploys.", at(2, 18), "success"
        ),
        "feb_cache": remember(service, "Clearing the CI cache did not help the build.", at(2, 12), "failure"),
        "feb_note": remember(service, "The staging database moved to a new host.", at(2, 20)),
        "jan_lock": remember(service, "Taking a file lock fixed the racing migrations.", at(1, 10), "success"),
        "mar_pool": remember(service, "A bigger connection pool ended the timeouts.", at(3, 10), "success"),
    }


def test_what_worked_last_month(service, history):
    """The original Vector Bridge's roadmap item: what worked last month, asked as of 15 March."""
    hits = search(service, "What worked last month?", as_of=AS_OF).results
    assert {h.id for h in hits[:2]} == {history["feb_pin"], history["feb_retry"]}
    assert hits[0].components.boost > 0 and hits[0].components.outcome > 0
    # The same question asked a month later means March.
    later = search(service, "What worked last month?", as_of=AS_OF + timedelta(days=30)).results
    assert later[0].id == history["mar_pool"]


def test_what_worked_last_month_as_a_filter(service, history):
    """since/until window when memories happened, not when they were stored (all stored on 1 March)."""
    window = {"since": "2026-02-01T00:00:00Z", "until": "2026-03-01T00:00:00Z"}
    hits = search(service, "what fixed the build, the deploys, the migrations, the timeouts?", filters=window).results
    assert {h.id for h in hits} == {history[k] for k in ("feb_pin", "feb_retry", "feb_cache")}
    assert search(service, "What worked last month?", as_of=AS_OF, filters=window).results[0].id in {
        history["feb_pin"],
        history["feb_retry"],
    }


def test_since_and_until_fall_back_to_the_stored_time(service, clock):
    stored_now = service.store_memory("t", {"project": "p", "content": "deploy notes for the gateway"}).memory.id
    assert service.get("t", stored_now).memory.occurred_at == clock.now

    def found(since, until):
        return [h.id for h in search(service, "deploy gateway", filters={"since": since, "until": until}).results]

    day = timedelta(days=1)
    assert found((clock.now - day).isoformat(), (clock.now + day).isoformat()) == [stored_now]
    assert found((clock.now + timedelta(days=1)).isoformat(), (clock.now + timedelta(days=2)).isoformat()) == []


def test_as_of_is_the_now_of_recency(service):
    recent = remember(service, "the deploy key rotates weekly", AS_OF - timedelta(days=1))
    hit = search(service, "deploy key rotates", as_of=AS_OF).results[0]
    assert hit.id == recent and hit.components.time == pytest.approx(0.5 ** (1 / 30), abs=1e-3)
    # Without as_of the clock (1 March) is now: a memory from "the future" counts as brand new.
    assert search(service, "deploy key rotates").results[0].components.time == pytest.approx(1.0)


def test_relative_dates_are_read_from_as_of(service):
    week_ago = remember(service, "we met about the billing export", AS_OF - timedelta(days=7))
    other = remember(service, "we met about the billing export again", AS_OF - timedelta(days=40))
    hits = {h.id: h for h in search(service, "when did we meet about billing a week ago?", as_of=AS_OF).results}
    assert hits[week_ago].components.boost > 0 and hits[other].components.boost == 0
    hits = {h.id: h for h in search(service, "when did we meet about billing a week ago?").results}
    assert hits[week_ago].components.boost == 0  # seen from 1 March, a week ago is 22 February


def test_as_of_is_strict(service):
    for bad in ("last week", "2026-13-01", "yesterday at noon"):
        with pytest.raises(InvalidInput) as err:
            search(service, "x", as_of=bad)
        assert "as_of" in str(err.value.details or err.value)
