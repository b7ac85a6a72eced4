"""Per-tenant usage at the edge, in one place: every admitted request is counted (by tenant, UTC
hour and operation: capsule.store.usage), the tenant's rate limit is kept, and the operations
that cost money get a CloudWatch metric per tenant when asked for.

``functions.app`` calls :func:`admit` once a request's identity and scope are accepted and
before anything else is done, so a refused request (401, 403, 413, ...) is not counted and a
request over the limit (429) has done nothing. Health and the OpenAPI document are not counted.

Settings (capsule.config): ``tenant_rate_limit`` (requests a minute; 0: none),
``usage_flush_seconds`` (how long counts wait in a process when there is no limit),
``tenant_metrics`` (the metric per tenant, off by default: each tenant x operation is a
CloudWatch custom metric, docs/aws.md). When the usage store cannot count, the request is served
and a warning logged: the store the request needs is then failing too, and answers for itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from capsule.core.errors import CapsuleError, Unavailable
from capsule.service.usage_meter import Meter
from capsule.store import sides
from capsule.store.usage import MINUTE_S

from . import async_jobs, routes

NAMESPACE = "CapsuleMemory"
TENANT_METRIC = "TenantRequests"
EXEMPT = frozenset({"health", "openapi"})
# The operations that cost money: they embed text (a provider's tokens), mine the tenant's
# memories, or write what is then embedded. The per-tenant metric is kept for these only.
COSTLY = frozenset(
    {
        "store",
        "ingest",
        "update",
        "revert",
        "search",
        "capture",
        "candidate_approve",
        "solution_create",
        "solution_import",
        "solution_update",
        "solution_search",
        "pattern_detect",
        "detect_patterns",
        "import_data",
        "sync_apply",
    }
)

Warn = Callable[..., Any]


class RateLimited(CapsuleError):
    """The tenant made more requests this minute than its limit allows (429, Retry-After)."""

    code = "rate_limited"
    status = 429

    def __init__(self, limit: int, retry_after_s: int) -> None:
        super().__init__(
            f"this tenant has made more than {limit} requests this minute (the limit, "
            f"CAPSULE_TENANT_RATE_LIMIT); nothing was done; retry after {retry_after_s} s",
            details=[
                {"field": "rate_limit_per_minute", "limit": limit, "message": f"at most {limit} requests a minute"}
            ],
        )
        self.retry_after_s = retry_after_s


_lock = threading.Lock()
_current: tuple[Any, Meter | None] | None = None  # (the memory store, the meter counting into its database)


def meter_for(service: Any) -> Meter | None:
    """The meter of this process for ``service``'s store and settings, made (and its store
    migrated) on first use; None when the store keeps no usage counters (capsule.store.sides)."""
    global _current
    store = getattr(service, "store", None)
    memories = getattr(store, "backing_store", store)
    with _lock:
        if _current is not None and _current[0] is memories:
            return _current[1]
        usage = sides.usage_store(memories)
        meter = None
        if usage is not None:
            settings = service.settings
            meter = Meter(usage, limit=settings.tenant_rate_limit, flush_s=settings.usage_flush_seconds)
        _current = (memories, meter)
        return meter


def install(service: Any, meter: Meter) -> None:
    """Count ``service``'s requests with ``meter`` (tests: a meter on their own clock)."""
    global _current
    with _lock:
        _current = (getattr(service.store, "backing_store", service.store), meter)


def release(warn: Warn) -> None:
    """Write what this process has buffered and forget its meter: the process stops, or its
    service is replaced (the old store is still open here)."""
    global _current
    with _lock:
        current, _current = _current, None
    if current is None or current[1] is None:
        return
    try:
        current[1].flush()
    except Unavailable as exc:
        warn("buffered usage counts could not be written; they are lost", error=exc.message)


def admit(route: routes.Route, tenant: str, service: Callable[[], Any], warn: Warn) -> RateLimited | None:
    """Count the request; RateLimited when the tenant is over its limit this minute."""
    if route.name in EXEMPT or not route.auth or async_jobs.running():
        return None  # a job's run was counted, and admitted, as the request that made it
    svc = service()
    try:
        meter = meter_for(svc)
        if meter is None:
            return None
        count = meter.count(tenant, route.name)
    except Unavailable as exc:
        warn("the request could not be counted; served without its count", error=exc.message)
        return None
    if count is not None and count > meter.limit:
        return RateLimited(meter.limit, MINUTE_S - int(meter.now() % MINUTE_S))
    if svc.settings.tenant_metrics and route.name in COSTLY:
        tenant_metric(route.name, tenant)
    return None


def tenant_metric(operation: str, tenant: str) -> None:
    """One EMF line: a request of ``operation`` by ``tenant`` (dimensions Operation, Tenant),
    unless metrics are off in this process (capsule serve)."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric
    from aws_lambda_powertools.metrics.functions import is_metrics_disabled

    if is_metrics_disabled():
        return
    with single_metric(name=TENANT_METRIC, unit=MetricUnit.Count, value=1, namespace=NAMESPACE) as metric:
        metric.add_dimension(name="Operation", value=operation)
        metric.add_dimension(name="Tenant", value=tenant[:1024])  # CloudWatch's longest dimension value
