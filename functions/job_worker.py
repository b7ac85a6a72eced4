"""The worker that runs asynchronous jobs (functions.async_jobs), hosted and local.

- Hosted: :func:`handler` is the worker function's Lambda handler (infra/async_jobs.py). The
  accepting function invokes it asynchronously with ``{"tenant", "job"}``; it runs the job within
  :data:`~functions.async_jobs.WORKER_DEADLINE_S` of its 15 minutes and returns the status.
- Local: :func:`install_local` gives the gateway worker process a thread that runs its jobs, and
  takes up again the jobs a stopped server left behind.

Either way a job runs through the route's own handler, built anew for jobs (a resolver holds the
event it handles, and the one serving requests may be busy beside it).
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from capsule.core.errors import CapsuleError

from . import app, async_jobs, routes, transfer_app

_handlers: dict[str, async_jobs.Handler] = {}
_lock = threading.Lock()


def route_handler(name: str) -> async_jobs.Handler:
    """The route's Lambda handler for jobs: its own resolver, built once per process."""
    with _lock:
        found = _handlers.get(name)
        if found is None:
            module = importlib.import_module(routes.by_name(name).handler.partition(":")[0])
            # with_event keeps the event where an import reads its raw body; harmless elsewhere
            found = _handlers[name] = transfer_app.with_event(app.make_handler(module.ENDPOINT))
        return found


class _Budget:
    """The worker invocation's context, its remaining time cut to the job's deadline."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self._cut = async_jobs.WorkerContext(async_jobs.WORKER_DEADLINE_S)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    def get_remaining_time_in_millis(self) -> int:
        own = getattr(self._context, "get_remaining_time_in_millis", None)
        left = self._cut.get_remaining_time_in_millis()
        return left if own is None else min(left, max(0, own() - 30_000))  # 30 s to record the answer


def run_job(tenant: str, job_id: str, context: Any = None) -> str | None:
    """Run one job of this deployment's store (what both dispatchers end in)."""
    store = async_jobs.store_for(app.service().store)
    budget = _Budget(context if context is not None else async_jobs.WorkerContext(async_jobs.WORKER_DEADLINE_S))
    return async_jobs.run(tenant, job_id, store=store, handler=route_handler, context=budget)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The worker function: ``{"tenant": ..., "job": ...}`` (anything else is refused)."""
    tenant, job_id = (event or {}).get("tenant"), (event or {}).get("job")
    if not isinstance(tenant, str) or not isinstance(job_id, str):
        app.logger.error("a job event without its tenant and id", extra={"keys": sorted(event or {})})
        return {"status": "refused"}
    try:
        status = run_job(tenant, job_id, context)
    except CapsuleError as exc:  # the store is unreachable: Lambda's retry takes it up after the lease
        app.logger.warning("a job could not be run", extra={"job": job_id, "error": exc.message})
        raise
    return {"job": job_id, "status": status or "not run: done, held by a live worker, or unknown"}


def install_local() -> async_jobs.ThreadDispatcher:
    """``capsule serve``'s worker process: jobs run on a thread of it; those a stopped server
    left queued or running past their lease are handed to it again now."""
    local = async_jobs.ThreadDispatcher(run_job)
    async_jobs.set_dispatcher(local)
    resumed = async_jobs.resume(async_jobs.store_for(app.service().store), local)
    if resumed:
        app.logger.info("jobs taken up again", extra={"count": resumed})
    return local
