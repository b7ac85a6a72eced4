"""Progress of long work (import, export, sync, ingest of a folder, bench) on standard error.

On a terminal: one line redrawn in place, ``label [#####-----] 120/400 30%  45.2/s  ETA 0:06``
(count, rate, time left; without a total, count and rate). When standard error is not a
terminal: nothing, unless ``CAPSULE_PROGRESS=json``, which writes one JSON object a line
(``{"progress": label, "done": n, "total": t, "rate": r, "eta_s": s}``) at most once a second
and at the end. ``CAPSULE_PROGRESS=off`` silences the bar on a terminal too. A command whose
first run can be long and silent (``capsule ingest``: the first one loads the model) asks for
``piped="lines"``: when standard error is not a terminal it then writes the bar's text as plain
lines, the first at once and then at most one every :data:`LINES_EVERY_S` seconds, and a
:meth:`Progress.note` (what it is waiting for) as a line of its own.
No dependency: a few lines of our own keep ``capsule`` quick to start.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import TextIO

BAR_WIDTH = 24
REDRAW_S = 0.1
JSON_EVERY_S = 1.0
LINES_EVERY_S = 3.0
_EVERY_S = {"bar": REDRAW_S, "json": JSON_EVERY_S, "lines": LINES_EVERY_S}


def clock_text(seconds: float) -> str:
    seconds = int(max(0, seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def figures(done: int, total: int | None, elapsed: float) -> tuple[float, float | None]:
    """(rate per second, seconds left or None when unknown)."""
    rate = done / elapsed if elapsed > 0 else 0.0
    left = (total - done) / rate if total is not None and rate > 0 else None
    return rate, left


def bar_line(label: str, done: int, total: int | None, elapsed: float, width: int = BAR_WIDTH) -> str:
    rate, left = figures(done, total, elapsed)
    if total:
        filled = min(width, int(width * done / total))
        head = f"{label} [{'#' * filled}{'-' * (width - filled)}] {done}/{total} {100 * done // total}%"
    else:
        head = f"{label} {done}"
    tail = f"  {rate:.1f}/s"
    if left is not None:
        tail += f"  ETA {clock_text(left)}"
    return head + tail


def mode_for(stream: TextIO, environ: Mapping[str, str], piped: str = "off") -> str:
    """bar on a terminal, else ``piped`` (off, or lines); CAPSULE_PROGRESS=off|json decides first."""
    wanted = (environ.get("CAPSULE_PROGRESS") or "").strip().lower()
    if wanted in ("off", "json"):
        return wanted
    isatty = getattr(stream, "isatty", None)
    return "bar" if isatty is not None and isatty() else piped


class Progress:
    """``with Progress("import", total) as p: p.advance(n)``; ``total`` may be None (unknown)."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        mode: str | None = None,
        piped: str = "off",
    ) -> None:
        self.label, self.total, self.done = label, total, 0
        self.stream = stream or sys.stderr
        self.mode = mode or mode_for(self.stream, os.environ if environ is None else environ, piped)
        self._clock = clock
        self._start = clock()
        self._drawn = -1e9

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self._clock()
        if now - self._drawn >= _EVERY_S.get(self.mode, JSON_EVERY_S):
            self._draw(now)

    def note(self, text: str) -> None:
        """Say what the work waits for (the model loading) when piped as lines; the bar and JSON stay as they are."""
        if self.mode == "lines":
            self.stream.write(f"{self.label}: {text}\n")
            self.stream.flush()

    def _draw(self, now: float, final: bool = False) -> None:
        self._drawn = now
        elapsed = now - self._start
        if self.mode == "bar":
            self.stream.write(
                "\r\x1b[2K" + bar_line(self.label, self.done, self.total, elapsed) + ("\n" if final else "")
            )
            self.stream.flush()
        elif self.mode == "lines":
            line = bar_line(self.label, self.done, self.total, elapsed, width=0).replace(" [] ", " ")
            if elapsed < 1:  # no rate yet worth the name
                line = line.split("  ", 1)[0]
            self.stream.write(line + ("  done" if final else "") + "\n")
            self.stream.flush()
        elif self.mode == "json":
            rate, left = figures(self.done, self.total, elapsed)
            self.stream.write(
                json.dumps(
                    {
                        "progress": self.label,
                        "done": self.done,
                        "total": self.total,
                        "rate": round(rate, 2),
                        "eta_s": None if left is None else round(left, 1),
                        "final": final,
                    }
                )
                + "\n"
            )
            self.stream.flush()

    def close(self) -> None:
        if self.mode != "off":
            self._draw(self._clock(), final=True)
            self.mode = "off"  # closing twice draws once


__all__ = ["Progress", "bar_line", "figures", "clock_text", "mode_for"]
