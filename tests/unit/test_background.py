"""The background worker: tasks run in order off the caller's thread, a failure is logged and
never raised, and an idle worker ends (the next task starts another)."""

from __future__ import annotations

import logging
import threading
import time

from capsule.service.background import Background


def test_tasks_run_in_order_and_a_failure_does_not_stop_the_rest(caplog):
    background = Background("test")
    done: list[str] = []
    callers: set[int] = set()

    def fail() -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.WARNING, logger="capsule.service.background"):
        for name in ("a", "b"):
            background.submit(lambda name=name: (done.append(name), callers.add(threading.get_ident())))
        background.submit(fail)
        background.submit(lambda: done.append("c"))
        background.wait()
    assert done == ["a", "b", "c"]
    assert threading.get_ident() not in callers
    assert "boom" in caplog.text


def test_an_idle_worker_ends_and_the_next_task_starts_another():
    background = Background("test")
    background.IDLE_S = 0.05
    done: list[int] = []
    background.submit(lambda: done.append(1))
    background.wait()
    deadline = time.monotonic() + 5
    while background._thread is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert background._thread is None
    background.submit(lambda: done.append(2))
    background.wait()
    assert done == [1, 2]
