"""One worker thread for the work a request should not wait for (reading an index's deferred
vectors, then writing its snapshot).

Tasks run one at a time, in order, on a daemon thread started with the first task: a process
that ends does not wait for them (whatever they had not done is done again by the next one).
A task's failure is logged and never raised: the request that scheduled it has long returned.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

logger = logging.getLogger("capsule.service.background")


class Background:
    IDLE_S = 5.0  # a worker with nothing to do for this long ends (the next task starts another)

    def __init__(self, name: str = "capsule-background") -> None:
        self.name = name
        self._tasks: queue.Queue[Callable[[], None]] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, task: Callable[[], None]) -> None:
        self._tasks.put(task)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def wait(self) -> None:
        """Until every task submitted so far has run (for tools that measure, and for tests)."""
        self._tasks.join()

    def _run(self) -> None:
        while True:
            try:
                task = self._tasks.get(timeout=self.IDLE_S)
            except queue.Empty:
                with self._lock:  # submit checks for a worker under this lock after queueing
                    if self._tasks.empty():
                        self._thread = None
                        return
                continue
            try:
                task()
            except Exception as exc:  # noqa: BLE001 - logged; the caller has returned
                logger.warning("a background task failed: %s", exc)
            finally:
                self._tasks.task_done()
