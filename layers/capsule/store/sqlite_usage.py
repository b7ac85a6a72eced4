"""Usage counters (:mod:`capsule.store.usage`) in the embedded SQLite file: two small tables,
created with ``IF NOT EXISTS``, written in the memory store's ``BEGIN IMMEDIATE`` transactions.
A tenant's minutes before the last are dropped as it counts (the limit reads only the current
one); hours past :data:`~capsule.store.usage.KEEP_DAYS` are dropped when the store is opened."""

from __future__ import annotations

import time

from .sqlite import SQLiteStore
from .sqlite_connection import create_schema
from .usage import HOUR_S, KEEP_DAYS, MINUTE_S, Counts, UsageHour, check_operation, hour_of

SCHEMA = """
CREATE TABLE IF NOT EXISTS usage_hours (
    tenant TEXT NOT NULL,
    hour INTEGER NOT NULL,
    operation TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (tenant, hour, operation)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_hours_age ON usage_hours (hour);
CREATE TABLE IF NOT EXISTS usage_minutes (
    tenant TEXT NOT NULL,
    minute INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (tenant, minute)
) WITHOUT ROWID
"""

ADD_HOUR = (
    "INSERT INTO usage_hours (tenant, hour, operation, n) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (tenant, hour, operation) DO UPDATE SET n = n + excluded.n"
)


class SQLiteUsageStore:
    def __init__(self, db: SQLiteStore, *, clock=time.time) -> None:
        self._db, self._clock = db, clock

    def migrate(self) -> None:
        with self._db._write() as conn:
            create_schema(conn, SCHEMA)
            conn.execute("DELETE FROM usage_hours WHERE hour < ?", (hour_of(self._clock()) - KEEP_DAYS * 24 * HOUR_S,))

    def count(self, tenant: str, operation: str, at: float) -> int:
        minute = int(at // MINUTE_S) * MINUTE_S
        with self._db._write() as conn:
            conn.execute(ADD_HOUR, (tenant, hour_of(at), check_operation(operation), 1))
            conn.execute("DELETE FROM usage_minutes WHERE tenant = ? AND minute < ?", (tenant, minute))
            row = conn.execute(
                "INSERT INTO usage_minutes (tenant, minute, n) VALUES (?, ?, 1) "
                "ON CONFLICT (tenant, minute) DO UPDATE SET n = n + 1 RETURNING n",
                (tenant, minute),
            ).fetchone()
        return int(row[0])

    def add(self, counts: Counts) -> None:
        if not counts:
            return
        rows = [(tenant, hour, check_operation(op), n) for (tenant, hour, op), n in counts.items() if n > 0]
        with self._db._write(rows=len(rows)) as conn:
            conn.executemany(ADD_HOUR, rows)

    def hours(self, tenant: str, since: int, until: int) -> list[UsageHour]:
        found: dict[int, UsageHour] = {}
        for row in self._db._read(
            "SELECT hour, operation, n FROM usage_hours WHERE tenant = ? AND hour >= ? AND hour < ? "
            "ORDER BY hour, operation",
            (tenant, since, until),
        ):
            hour = found.setdefault(row["hour"], UsageHour(row["hour"], 0, {}))
            hour.operations[row["operation"]] = row["n"]
        return [UsageHour(h.start, sum(h.operations.values()), h.operations) for h in found.values()]
