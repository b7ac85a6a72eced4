"""The scheduled jobs as Lambda handlers (EventBridge calls them; the CDK app names them).

The event may carry a budget for the run, e.g. ``{"max_tenants": 10}``; anything else in
it is ignored. Each handler returns the job's report, which CloudWatch keeps.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from capsule.core import deadline
from capsule.jobs.scheduled import Jobs
from capsule.runtime.learning import build_jobs
from capsule.runtime.service import build_service

from .secrets import load_settings

logger = logging.getLogger("capsule.jobs.scheduled")

BUDGET_KEYS = {
    "retention": ("max_evictions",),
    "mining": ("max_tenants",),
    "backfill": ("batch", "max_batches"),
    "redact": ("max_memories", "page"),
}


@lru_cache(maxsize=1)
def _jobs() -> Jobs:
    # Built once per warm container, like the API handlers' service.
    # The environment, plus the deployment's secret when CAPSULE_SECRET_ARN names one.
    return build_jobs(build_service(load_settings()))


def _budget(name: str, event: Any) -> dict[str, int]:
    if not isinstance(event, dict):
        return {}
    return {k: int(event[k]) for k in BUDGET_KEYS[name] if isinstance(event.get(k), int) and event[k] > 0}


def run(name: str, event: Any, jobs: Jobs | None = None) -> dict[str, Any]:
    report = (jobs or _jobs()).run(name, **_budget(name, event))
    logger.info("%s: %s", name, report.explanation)
    return report.model_dump(mode="json")


def retention_handler(event: Any, context: Any) -> dict[str, Any]:
    with deadline.within(deadline.from_lambda_context(context)):
        return run("retention", event)


def mining_handler(event: Any, context: Any) -> dict[str, Any]:
    with deadline.within(deadline.from_lambda_context(context)):
        return run("mining", event)


def backfill_handler(event: Any, context: Any) -> dict[str, Any]:
    with deadline.within(deadline.from_lambda_context(context)):
        return run("backfill", event)


def redact_handler(event: Any, context: Any) -> dict[str, Any]:
    with deadline.within(deadline.from_lambda_context(context)):
        return run("redact", event)
