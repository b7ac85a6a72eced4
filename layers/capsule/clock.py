"""Clocks are passed in, so tests can move time without patching."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Callable

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(timezone.utc)


class FrozenClock:
    """A clock for tests and imports: returns ``now`` until moved."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


def to_epoch(value: datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


_MIN_EPOCH = datetime(1, 1, 2, tzinfo=timezone.utc).timestamp()
_MAX_EPOCH = datetime(9999, 12, 30, tzinfo=timezone.utc).timestamp()


def from_epoch(value: float | None) -> datetime | None:
    """The stored time, within the years Python can hold: a row written before the edge
    refused such times (year 10000 in UTC) must still read, or its whole project could not."""
    if value is None:
        return None
    if value != value:  # NaN
        value = 0.0
    return datetime.fromtimestamp(min(max(value, _MIN_EPOCH), _MAX_EPOCH), tz=timezone.utc)
