"""Where handlers run for the local gateway: warm worker processes, like Lambda containers.

Each worker builds the service once and runs one invocation at a time. One process must not
run two at once: the Powertools resolver keeps the current event in class state.
"""

from __future__ import annotations

import faulthandler
import importlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Protocol

from capsule.config import Settings
from capsule.errors import Unavailable

from . import routes

log = logging.getLogger("capsule.gateway")


class Invoker(Protocol):
    def invoke(self, handler: str, event: dict[str, Any]) -> dict[str, Any]: ...

    def close(self) -> None: ...


def _worker_start(settings: Settings) -> None:
    # The parent decides when to stop: a Ctrl-C reaches the whole process group, and a worker
    # killed by it would drop the request it is running.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _exit_with_parent()
    faulthandler.enable()  # a worker that crashes in native code says where, on the server's stderr
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no CloudWatch here; keep stdout quiet
    from capsule.runtime import build_service

    from . import app

    app.set_service(build_service(settings))


def _exit_with_parent() -> None:
    """End this worker when ``capsule serve`` ends, however it ends.

    A server killed outright (SIGKILL, out of memory) runs no cleanup, and its workers ignore
    SIGTERM and hold both ends of their task queue, so they would wait for work forever. A
    request a worker is running then is dropped with its client, as in a killed container;
    SQLite rolls back its open transaction.
    """
    parent = multiprocessing.parent_process()
    if parent is None:  # not started by a pool (called directly, as in a test)
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _resolve(handler: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    module_name, _, attribute = handler.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def _worker_invoke(handler: str, event: dict[str, Any]) -> dict[str, Any]:
    from .app import LocalContext

    name = handler.split(":")[0].rsplit(".", 1)[-1]
    context = LocalContext(function_name=f"capsule-{name}", aws_request_id=event["requestContext"]["requestId"])
    return _resolve(handler)(event, context)


def _worker_warm() -> int:
    for route in routes.ROUTES:
        _resolve(route.handler)
    return os.getpid()


def _exit_codes(pool: ProcessPoolExecutor) -> str:
    """How a broken pool's workers ended (a negative code is the signal that ended one)."""
    processes = getattr(pool, "_processes", None) or {}  # the executor keeps no public list
    codes = [process.exitcode for process in list(processes.values())]
    return "exit codes " + ", ".join(map(str, codes)) if codes else "exit codes unknown"


class ProcessPoolInvoker:
    """Warm worker processes, each building the service once (like Lambda containers).

    A worker that dies (killed, out of memory) breaks the pool: the request it held gets 503
    and a fresh pool takes the next ones, as Lambda replaces a crashed container.
    """

    def __init__(self, settings: Settings, workers: int) -> None:
        self.settings = settings
        self.workers = workers
        self._lock = threading.Lock()
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_start, initargs=(self.settings,),
        )

    def warm(self, attempts: int = 2) -> None:
        """Start every worker and import every handler now, not on the first request.

        A worker that dies while starting is replaced once, as a crashed container would be;
        one that cannot start at all (a bad setting, a missing package) fails again and stops
        ``capsule serve`` with the error.
        """
        for attempt in range(1, attempts + 1):
            pool = self._pool
            try:
                for future in [pool.submit(_worker_warm) for _ in range(self.workers)]:
                    future.result(timeout=300)
                return
            except BrokenProcessPool:
                if attempt == attempts:
                    raise
                log.error("a handler worker died while starting (%s); starting fresh workers", _exit_codes(pool))
                with self._lock:
                    self._pool = self._new_pool()
                pool.shutdown(wait=False)

    def invoke(self, handler: str, event: dict[str, Any]) -> dict[str, Any]:
        pool = self._pool
        try:
            return pool.submit(_worker_invoke, handler, event).result()
        except BrokenProcessPool as exc:
            with self._lock:
                if self._pool is pool:
                    log.error("a handler worker died (%s); starting fresh workers", _exit_codes(pool))
                    self._pool = self._new_pool()
                    pool.shutdown(wait=False)
            raise Unavailable("the handler worker stopped while running this request; retry it") from exc

    def close(self) -> None:
        with self._lock:
            self._pool.shutdown(wait=True)
