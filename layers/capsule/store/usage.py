"""Usage counters: how many requests each tenant made, per UTC hour and per operation, and per
minute for the tenant's rate limit (the edge, functions.metering, decides what is counted and
when; capsule.service.usage_meter buffers the counts when no limit is set).

Two writes: :meth:`UsageStore.count` adds one request now and answers the tenant's count in
this minute (one atomic write, one round trip: the rate limit's check), and
:meth:`UsageStore.add` adds buffered counts of any number of tenant-hours (one transaction in
SQLite, one upsert per tenant-hour in MongoDB). An
operation is a route name (a fixed set, :data:`OPERATION`), so it is safe as a field name.
Hours are kept :data:`KEEP_DAYS` days. Backends: SQLite (sqlite_usage) and MongoDB
(mongo_usage), in the memory store's own database.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

KEEP_DAYS = 400
HOUR_S = 3600
MINUTE_S = 60
OPERATION = re.compile(r"^[a-z][a-z_]{0,63}$")  # a route's name: no dot, no dollar, no injection

# (tenant, hour's start in epoch seconds, operation) -> requests
Counts = Mapping[tuple[str, int, str], int]


def hour_of(epoch: float) -> int:
    """The start of the UTC hour holding ``epoch``, in epoch seconds."""
    return int(epoch // HOUR_S) * HOUR_S


def minute_of(epoch: float) -> int:
    """The minute of its hour (0-59) holding ``epoch``."""
    return int(epoch % HOUR_S) // MINUTE_S


def check_operation(operation: str) -> str:
    if not OPERATION.match(operation):
        raise ValueError(f"not an operation name: {operation!r}")
    return operation


@dataclass(frozen=True, slots=True)
class UsageHour:
    start: int  # the hour's start, epoch seconds (UTC)
    requests: int
    operations: dict[str, int] = field(default_factory=dict)


class UsageStore(Protocol):
    def migrate(self) -> None:
        """Create what the counters need (idempotent); drop hours older than :data:`KEEP_DAYS`
        where the backend does not expire them itself."""
        ...

    def count(self, tenant: str, operation: str, at: float) -> int:
        """Add one request of ``operation`` at epoch ``at``, atomically; the tenant's requests in
        ``at``'s minute, this one included. Raises Unavailable when the store cannot answer."""
        ...

    def add(self, counts: Counts) -> None:
        """Add buffered counts (no minute counts: those serve only the limit)."""
        ...

    def hours(self, tenant: str, since: int, until: int) -> list[UsageHour]:
        """The tenant's hours starting at or after ``since`` and before ``until`` (epoch seconds),
        ascending; hours without a request are absent."""
        ...
