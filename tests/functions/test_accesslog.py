"""The worker's access line (functions.accesslog) is the line logging wrote before, for less CPU."""

from __future__ import annotations

import io
import logging

from functions import accesslog


def logged(line: str, at: float) -> str:
    """What ``logging.basicConfig(format="%(asctime)s %(message)s")`` wrote for ``line`` at ``at``."""
    record = logging.makeLogRecord({"msg": line, "levelno": logging.INFO, "levelname": "INFO"})
    record.created, record.msecs = at, int((at - int(at)) * 1000) + 0.0
    return logging.Formatter("%(asctime)s %(message)s").format(record) + "\n"


def test_a_line_is_what_logging_wrote():
    line = '127.0.0.1 "POST /v1/memories/search" 200 4762 3.2ms tenant=local request=abc'
    for at in (1_780_000_000.0, 1_780_000_000.999, 1_780_000_001.0405, 1_780_003_600.5):
        out = io.StringIO()
        accesslog.stderr_writer(out, clock=lambda at=at: at)(line)
        assert out.getvalue() == logged(line, at)


def test_the_seconds_text_follows_the_clock():
    now = [1_780_000_000.25]
    out = io.StringIO()
    write = accesslog.stderr_writer(out, clock=lambda: now[0])
    write("a")
    now[0] += 61
    write("b")
    first, second = out.getvalue().splitlines()
    assert first == logged("a", 1_780_000_000.25).strip() and second == logged("b", 1_780_000_061.25).strip()


def test_a_closed_stream_does_not_fail_the_request():
    out = io.StringIO()
    out.close()
    accesslog.stderr_writer(out)("a line")  # nothing raised
