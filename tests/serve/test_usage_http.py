"""Per-tenant usage through ``capsule serve``: with no limit its workers buffer the counts, and a
worker stopped with SIGTERM writes them before it exits (functions.workers, functions.metering)."""

from __future__ import annotations

from capsule.store.sqlite import SQLiteStore
from capsule.store.sqlite_usage import SQLiteUsageStore

from .server import Server


def test_buffered_counts_are_written_when_serve_stops(tmp_path):
    server = Server(tmp_path)
    try:
        for i in range(3):
            r = server.request("POST", "/v1/memories", {"project": "p", "content": f"memory {i}"})
            assert r.status == 201, r
        r = server.request("GET", "/v1/usage?bucket=day")
        assert r.status == 200, r
        assert r.json["bucket"] == "day" and r.json["rate_limit_per_minute"] is None
        assert "may not show yet" in r.json["explanation"]
        assert server.request("GET", "/v1/usage?bucket=month").status == 422
    finally:
        code = server.stop()
    assert code == 0, "".join(server.stderr)
    store = SQLiteStore(tmp_path / "capsule.db")
    try:
        hours = SQLiteUsageStore(store).hours("local", 0, 2**35)
    finally:
        store.close()
    counted = {op: sum(h.operations.get(op, 0) for h in hours) for op in ("store", "usage")}
    assert counted == {"store": 3, "usage": 2}, (hours, "".join(server.stderr))
