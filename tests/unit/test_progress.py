"""The progress line (capsule_cli.progress): its figures, and when it draws."""

from __future__ import annotations

import io
import json

from capsule_cli.progress import Progress, bar_line, clock_text, figures, mode_for


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_figures_and_the_line():
    assert figures(50, 200, 10.0) == (5.0, 30.0)
    assert figures(0, 200, 0.0) == (0.0, None)
    assert clock_text(3725) == "1:02:05" and clock_text(65) == "1:05"
    assert bar_line("import", 50, 200, 10.0, width=8) == "import [##------] 50/200 25%  5.0/s  ETA 0:30"
    assert bar_line("sync", 7, None, 2.0) == "sync 7  3.5/s"


def test_a_terminal_gets_the_bar_a_pipe_nothing_unless_json_is_asked():
    assert mode_for(Tty(), {}) == "bar" and mode_for(io.StringIO(), {}) == "off"
    assert mode_for(io.StringIO(), {"CAPSULE_PROGRESS": "json"}) == "json"
    assert mode_for(Tty(), {"CAPSULE_PROGRESS": "off"}) == "off"


def test_json_lines_are_throttled_and_the_last_is_final():
    now = [0.0]
    out = io.StringIO()
    with Progress("export", 10, stream=out, mode="json", clock=lambda: now[0]) as bar:
        for _ in range(10):
            now[0] += 0.3
            bar.advance()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert 2 <= len(lines) <= 5 and lines[-1]["final"] and lines[-1]["done"] == 10 and lines[-1]["total"] == 10


def test_the_bar_redraws_in_place_and_ends_with_a_newline():
    out = Tty()
    now = [0.0]
    with Progress("ingest", 3, stream=out, clock=lambda: now[0]) as bar:
        for _ in range(3):
            now[0] += 1
            bar.advance()
    text = out.getvalue()
    assert text.startswith("\r") and text.endswith("3/3 100%  1.0/s  ETA 0:00\n")


def test_a_long_silent_command_asks_for_plain_lines_when_piped():
    """Issue 30: the first `capsule ingest` piped said nothing for 35-40 s (the model loading)."""
    assert mode_for(io.StringIO(), {}, piped="lines") == "lines" and mode_for(Tty(), {}, piped="lines") == "bar"
    assert mode_for(io.StringIO(), {"CAPSULE_PROGRESS": "off"}, piped="lines") == "off"
    now = [0.0]
    out = io.StringIO()
    p = Progress("ingest (files)", 10, stream=out, environ={}, clock=lambda: now[0], piped="lines")
    p.advance()  # the first line at once
    p.note("opening the store and the embedder")
    for _ in range(8):
        now[0] += 1.0
        p.advance()  # then one every LINES_EVERY_S (3 s)
    p.close()
    assert out.getvalue().splitlines() == [
        "ingest (files) 1/10 10%",
        "ingest (files): opening the store and the embedder",
        "ingest (files) 4/10 40%  1.3/s  ETA 0:04",
        "ingest (files) 7/10 70%  1.2/s  ETA 0:02",
        "ingest (files) 9/10 90%  1.1/s  ETA 0:00  done",
    ]
