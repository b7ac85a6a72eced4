"""The scheduled jobs inside ``capsule serve``: one small daemon thread with intervals.

Backfill runs often (memories stored while the embedder was down become searchable by
meaning soon), and again after a short pause while a run leaves memories it could have embedded
(a switch of embedder re-embeds every memory: at the embedder's pace, not 1,280 per 5 minutes),
mining hourly, retention and redact (the secrets sweep) daily; each first runs
shortly after start. A run that fails is logged and retried at its next interval; the leases in
the store keep this thread and a ``capsule jobs run`` (or a second ``serve``) from working at the
same time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from capsule.core.errors import CapsuleError
from capsule.jobs.scheduled import JobReport, Jobs
from capsule.runtime.learning import build_jobs
from capsule.service.memory_service import MemoryService

log = logging.getLogger("capsule.jobs.scheduled")

# redact: a sweep by the secret rules; once finished under the current rules a run does nothing.
INTERVALS_S: Mapping[str, float] = {"backfill": 300.0, "mining": 3600.0, "retention": 86400.0, "redact": 86400.0}
FIRST_DELAY_S = 30.0
# A backfill that embedded and left more runs again after this pause (searches embed between its
# batches anyway: the embedders run one batch at a time).
CONTINUE_S = 2.0


class Scheduler:
    def __init__(
        self,
        jobs: Jobs,
        intervals: Mapping[str, float] = INTERVALS_S,
        *,
        first_delay_s: float = FIRST_DELAY_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.jobs = jobs
        self.intervals = dict(intervals)
        self._monotonic = monotonic
        start = monotonic() + first_delay_s
        self._due = {name: start for name in self.intervals}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="capsule-jobs", daemon=True)
        self.reports: list = []  # the latest few, for whoever wants to look

    def run_due(self) -> list[str]:
        """Run every job whose time has come; returns their names."""
        ran = []
        for name, due in sorted(self._due.items(), key=lambda kv: kv[1]):
            if self._stop.is_set() or self._monotonic() < due:
                continue
            pause = self.intervals[name]
            try:
                report = self.jobs.run(name)
                log.info("job %s: %s", name, report.explanation)
                self.reports = (self.reports + [report])[-20:]
                if _more_to_embed(report):
                    pause = min(pause, CONTINUE_S)
            except CapsuleError as exc:  # a store or embedder outage: try again next time
                log.warning("job %s failed: %s", name, exc.message)
            self._due[name] = self._monotonic() + pause
            ran.append(name)
        return ran

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_due()
            wait = max(0.5, min(self._due.values()) - self._monotonic())
            self._stop.wait(min(wait, 60.0))

    def start(self) -> Scheduler:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)


def _more_to_embed(report: JobReport) -> bool:
    """A backfill run that embedded memories and stopped at its budget with more pending (not
    one the embedder failed: that waits for the interval)."""
    counts = report.counts
    return report.job == "backfill" and counts.get("embedded", 0) > 0 and counts.get("pending", 0) > 0


def start(service: MemoryService) -> Callable[[], None]:
    """The ``capsule serve`` hook: start the scheduler, return its stop."""
    return Scheduler(build_jobs(service)).start().stop
