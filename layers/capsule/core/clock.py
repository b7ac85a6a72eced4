"""Clocks are passed in, so tests can move time without patching."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import overload

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


class FrozenClock:
    """A clock for tests and imports: returns ``now`` until moved."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


def to_epoch(value: datetime) -> float:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


_MIN_EPOCH = datetime(1, 1, 2, tzinfo=UTC).timestamp()
_MAX_EPOCH = datetime(9999, 12, 30, tzinfo=UTC).timestamp()


@overload
def from_epoch(value: float) -> datetime: ...
@overload
def from_epoch(value: None) -> None: ...
@overload
def from_epoch(value: float | None) -> datetime | None: ...


def from_epoch(value: float | None) -> datetime | None:
    """The stored time, within the years Python can hold: a row written before the edge
    refused such times (year 10000 in UTC) must still read, or its whole project could not."""
    if value is None:
        return None
    if value != value:  # NaN
        value = 0.0
    return datetime.fromtimestamp(min(max(value, _MIN_EPOCH), _MAX_EPOCH), tz=UTC)
