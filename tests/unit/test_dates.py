"""capsule.search.dates: what a query says about time, read from the search's "now" (table tests)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import numpy as np
import pytest

from capsule.search.dates import Window, closeness, windows

MONDAY = datetime(2023, 5, 29, 15, 0, tzinfo=UTC)  # a Monday


def days(query: str, as_of: datetime = MONDAY) -> list[tuple[str, str]]:
    """Each window as (first day, last day) inclusive, in as_of's calendar."""
    return [
        (w.start.date().isoformat(), (w.end - timedelta(seconds=1)).date().isoformat()) for w in windows(query, as_of)
    ]


@pytest.mark.parametrize(
    "query, expected",
    [
        ("what did I cook yesterday?", [("2023-05-28", "2023-05-28")]),
        ("the day before yesterday", [("2023-05-27", "2023-05-27")]),
        ("anything today?", [("2023-05-29", "2023-05-29")]),
        ("which book did I finish a week ago?", [("2023-05-19", "2023-05-26")]),  # 7 days back, +-3.5
        ("two days ago", [("2023-05-27", "2023-05-27")]),
        ("a couple of days ago", [("2023-05-26", "2023-05-28")]),
        ("what did I buy three months ago", [("2023-02-13", "2023-03-15")]),  # 90 days back, +-15
        ("what certification did I complete last month?", [("2023-04-01", "2023-04-30")]),
        ("what worked this month", [("2023-05-01", "2023-05-31")]),
        ("last week", [("2023-05-22", "2023-05-28")]),
        ("last year", [("2022-01-01", "2022-12-31")]),
        ("in the past three weeks", [("2023-05-08", "2023-05-29")]),
        ("over the past month", [("2023-04-29", "2023-05-29")]),
        ("how much did I earn last Thursday?", [("2023-05-25", "2023-05-25")]),
        ("last Monday", [("2023-05-22", "2023-05-22")]),
        ("on Sunday", [("2023-05-28", "2023-05-28")]),
        ("museums in the month of February?", [("2023-02-01", "2023-02-28")]),
        ("in June", [("2022-06-01", "2022-06-30")]),  # not yet June: last year's
        ("the March 3rd meeting", [("2023-03-03", "2023-03-03")]),
        ("on the 3rd of March", [("2023-03-03", "2023-03-03")]),
        ("the 2/8 trip", [("2023-02-08", "2023-02-08"), ("2022-08-02", "2022-08-02")]),  # both readings
        ("before the 7/22 trip", [("2022-07-22", "2022-07-22")]),  # 22/7 is no date
        ("last spring", [("2022-03-01", "2022-05-31")]),  # spring now: the one before
        ("this winter", [("2022-12-01", "2023-02-28")]),
        ("the week before March 3", [("2023-03-03", "2023-03-03"), ("2023-02-24", "2023-02-24")]),
        ("on 8 May, 2023", [("2023-05-08", "2023-05-08")]),
        ("in May 2021", [("2021-05-01", "2021-05-31")]),
        ("2023-01-15", [("2023-01-15", "2023-01-15")]),
        ("when did I adopt the puppy?", []),
        ("how many days ago did I watch the Super Bowl?", []),  # asks how long: names no time itself
        ("what was my last name before I changed it?", []),
        ("24/7 support", []),
        ("the day before", []),  # before what: nothing to move
    ],
)
def test_times_a_query_names(query, expected):
    assert days(query) == expected


def test_recently_is_the_last_fortnight_softly():
    [w] = windows("what did I watch recently?", MONDAY)
    assert w.start == MONDAY - timedelta(days=14) and w.slack == timedelta(days=14)


def test_as_of_decides_the_year_and_the_day():
    assert days("in February", datetime(2024, 1, 10, tzinfo=UTC)) == [("2023-02-01", "2023-02-28")]
    assert days("yesterday", datetime(2024, 3, 1, tzinfo=UTC)) == [("2024-02-29", "2024-02-29")]
    assert days("on 2/29", datetime(2023, 5, 1, tzinfo=UTC)) == [("2020-02-29", "2020-02-29")]


def test_calendar_days_are_those_of_as_of_own_zone():
    tokyo = timezone(timedelta(hours=9))
    [w] = windows("yesterday", datetime(2023, 5, 29, 1, 0, tzinfo=tokyo))  # still 28 May in UTC
    assert w.start == datetime(2023, 5, 28, tzinfo=tokyo)
    assert w.start.astimezone(UTC).date() == date(2023, 5, 27)


def test_a_naive_as_of_is_utc():
    utc = datetime(2023, 5, 29, tzinfo=UTC)
    assert windows("yesterday", datetime(2023, 5, 29)) == windows("yesterday", utc)


def test_closeness_is_one_inside_and_fades_over_the_slack():
    start = datetime(2023, 5, 1, tzinfo=UTC)
    w = Window(start, start + timedelta(days=1), timedelta(days=2))
    at = np.array([start + timedelta(hours=h) for h in (12, 24 + 24, -24, 24 + 72)])
    got = closeness(np.array([t.timestamp() for t in at]), [w])
    assert got.tolist() == pytest.approx([1.0, 0.5, 0.5, 0.0])
    hard = Window(start, start + timedelta(days=1))
    assert closeness(np.array([(start - timedelta(seconds=1)).timestamp()]), [hard]).tolist() == [0.0]
