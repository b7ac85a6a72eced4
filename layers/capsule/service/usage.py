"""A tenant's usage over time (GET /v1/usage): its requests per UTC hour or day, by operation,
read from the usage counters (:mod:`capsule.store.usage`).

The window is ``since`` (inclusive) to ``until`` (exclusive), widened to whole buckets (since
down, until up), by default the last 24 hours up to the end of the current hour. Hours are
kept 400 days, so a window spans at most :data:`MAX_SPAN_DAYS` of its bucket: 31 days of
hours, 400 days of days. Only buckets with a request are listed, ascending.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from ..core.errors import InvalidInput
from ..store.usage import HOUR_S, UsageHour, UsageStore

Bucket = Literal["hour", "day"]
BUCKET_S: dict[str, int] = {"hour": HOUR_S, "day": 24 * HOUR_S}
MAX_SPAN_DAYS: dict[str, int] = {"hour": 31, "day": 400}
DEFAULT_SPAN_S = 24 * HOUR_S
# The years a window may name: an hour's arithmetic stays within what datetime can show.
EARLIEST, LATEST = datetime(1970, 1, 1, tzinfo=UTC), datetime(9999, 1, 1, tzinfo=UTC)


class UsageBucket(BaseModel):
    start: str = Field(description="The bucket's start (RFC 3339, UTC)")
    requests: int = Field(description="Requests the tenant made in it")
    operations: dict[str, int] = Field(description="Requests by operation (route name)")


class UsageReport(BaseModel):
    bucket: Bucket
    since: str = Field(description="The window's start, widened to a whole bucket (inclusive)")
    until: str = Field(description="The window's end, widened to a whole bucket (exclusive)")
    rate_limit_per_minute: int | None = Field(description="The tenant's requests per minute at most; null: no limit")
    series: list[UsageBucket] = Field(description="Buckets with at least one request, ascending")
    explanation: str


def stamp(epoch: int) -> str:
    return f"{datetime.fromtimestamp(epoch, UTC):%Y-%m-%dT%H:%M:%SZ}"


def _epoch(value: datetime, name: str) -> float:
    if not EARLIEST <= value < LATEST:
        raise InvalidInput(f"{name} must be between 1970 and 9999", field=name)
    return value.timestamp()


def window(since: datetime | None, until: datetime | None, bucket: Bucket, now: float) -> tuple[int, int]:
    """The window in epoch seconds, widened to whole buckets; InvalidInput names the field
    that puts it out of bounds."""
    size = BUCKET_S[bucket]
    end = _epoch(until, "until") if until is not None else math.ceil(now / HOUR_S) * HOUR_S
    start = _epoch(since, "since") if since is not None else end - DEFAULT_SPAN_S
    if end <= start:
        raise InvalidInput("until must be later than since", field="until")
    first, last = int(start // size) * size, math.ceil(end / size) * size
    most = MAX_SPAN_DAYS[bucket]
    if last - first > most * 24 * HOUR_S:
        days = (last - first) / (24 * HOUR_S)
        other = " (bucket=day allows 400)" if bucket == "hour" else ""
        raise InvalidInput(
            f"since to until spans {days:g} days; at most {most} days of {bucket}s{other}", field="since"
        )
    return first, last


def _buckets(hours: list[UsageHour], size: int) -> list[UsageBucket]:
    found: dict[int, UsageBucket] = {}
    for hour in hours:
        start = hour.start - hour.start % size
        into = found.setdefault(start, UsageBucket(start=stamp(start), requests=0, operations={}))
        into.requests += hour.requests
        for operation, n in hour.operations.items():
            into.operations[operation] = into.operations.get(operation, 0) + n
    return [found[start] for start in sorted(found)]


def usage_report(
    store: UsageStore,
    tenant: str,
    *,
    since: datetime | None,
    until: datetime | None,
    bucket: Bucket,
    now: float,
    rate_limit: int,
    buffered_s: float | None,
) -> UsageReport:
    """``buffered_s``: how long counts may wait in a process before they are written (None:
    written at each request, as when a rate limit is set)."""
    first, last = window(since, until, bucket, now)
    series = _buckets(store.hours(tenant, first, last), BUCKET_S[bucket])
    total = sum(b.requests for b in series)
    said = [
        f"{total} requests from {stamp(first)} to {stamp(last)} (UTC, widened to whole {bucket}s), "
        f"in {len(series)} {bucket}{'s' if len(series) != 1 else ''} that had any."
    ]
    if rate_limit:
        said.append(f"Each tenant may make {rate_limit} requests a minute; more are answered 429.")
    else:
        said.append("No rate limit is set.")
    if buffered_s is not None:
        said.append(
            f"Counts wait in each server process up to {buffered_s:g} s before they are written, "
            "so the most recent requests may not show yet."
        )
    return UsageReport(
        bucket=bucket,
        since=stamp(first),
        until=stamp(last),
        rate_limit_per_minute=rate_limit or None,
        series=series,
        explanation=" ".join(said),
    )
