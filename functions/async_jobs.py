"""Asynchronous jobs: work that would outlive API Gateway's 30 s leaves the request path.

An ingest, an import or a mining run (:data:`ROUTES`) becomes a job when the caller asks for it
with ``Prefer: respond-async`` (RFC 7240), or when the request is larger than the synchronous
budget allows (:func:`over_budget`, the one place the thresholds live). The request is validated
first, exactly as the synchronous route validates it (a bad body is the same 4xx at once and
nothing is queued); then the job is kept (capsule.store.async_jobs) and handed to a
:class:`Dispatcher`, and the answer is **202** with ``Location: /v1/jobs/{id}``. Without the
preference and within the budget, the route answers synchronously as it always did.

A job keeps the request's event without its credentials (the headers but Content-Type are
dropped; the verified identity in ``requestContext.authorizer`` is kept), and the worker replays
it through the route's own handler (:func:`run`): the caller's scope is checked again, the same
service call runs, and the job records the very answer (status, headers, body) the route would
have given. ``GET /v1/jobs/{id}`` (functions.handlers.job_get) shows it to the caller who
submitted it.

Two dispatchers, one code path: hosted, the accepting function invokes the worker function
asynchronously (:class:`LambdaDispatcher`, its name in ``CAPSULE_JOB_FUNCTION``; the payload is
the tenant and the job's id only); locally (``capsule serve``), a thread of the gateway worker
runs it (:class:`ThreadDispatcher`), and jobs left queued or past their lease when a server
stopped are taken up again when it starts (:func:`resume`). A dispatch that fails answers 503
and marks the job failed, not started: nothing was done, the caller may send it again.
"""

from __future__ import annotations

import contextvars
import io
import json
import logging
import os
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import BaseModel, Field

from capsule.core.errors import CapsuleError, NotFound, Unavailable
from capsule.store.async_jobs import DONE, FAILED, QUEUED, RUNNING, SUCCEEDED, Job, JobStore

from . import routes
from .tenancy import per_session, principal_tenant

log = logging.getLogger("capsule.jobs.async")

ROUTES: frozenset[str] = frozenset({"ingest", "import_data", "detect_patterns"})
FUNCTION_VARIABLE = "CAPSULE_JOB_FUNCTION"  # the worker function (hosted); unset: a local thread
PREFER = "respond-async"
TTL_S = 7 * 86_400  # a job (and its answer) is kept this long after it was accepted
WORKER_TIMEOUT_S = 900  # the worker function's timeout (Lambda's most)
WORKER_DEADLINE_S = 840  # what a job's run may use: 14 min, leaving the worker time to record it
LEASE_S = WORKER_TIMEOUT_S + 60  # a running job no live worker can still hold after this
MAX_ATTEMPTS = 2  # a job whose worker died twice is failed, not tried forever
POLL_AFTER_S = 2  # Retry-After of the 202: when a first poll is worth making
PURGE_EVERY = 100  # jobs accepted between two sweeps of expired ones (MongoDB's TTL index sweeps on its own)

# ---- the synchronous budget (one place) ---------------------------------------------------------
# A route has MAX_TIMEOUT_S (25 s); a request at a threshold should take about half of it.
# Ingest: the offline MiniLM embedder (capsule serve's default) embedded and stored 64 chunks in
# 10.3 s (161-181 ms a chunk) on a shared 2-core machine (docs/http-api.md "Jobs"); a hosted
# provider embeds in batches, faster. Import: not measured; 2,000 lines is a conservative guess
# (an export's rows carry their vectors, so an import embeds little).
SYNC_INGEST_CHUNKS = 64
SYNC_IMPORT_LINES = 2_000


def over_budget(route: str, event: dict[str, Any], body: dict[str, Any] | None) -> bool:
    """Whether the request is estimated to outlive the route's synchronous budget."""
    if route == "ingest" and body is not None and isinstance(body.get("text"), str):
        from capsule.service.chunking import chunk_text

        path = body.get("path") if isinstance(body.get("path"), str) else None
        return len(chunk_text(body["text"], path=path)) > SYNC_INGEST_CHUNKS
    if route == "import_data":
        return _raw(event).count(b"\n") + 1 > SYNC_IMPORT_LINES
    return False  # mining: its work depends on the stored memories; asked for with Prefer only


def prefers_async(event: dict[str, Any]) -> bool:
    """``Prefer: respond-async`` among the request's preferences (RFC 7240: tokens, case-insensitive)."""
    values = [str(v) for k, v in (event.get("headers") or {}).items() if k.lower() == "prefer"]
    tokens = (part.split(";")[0].split("=")[0].strip().lower() for v in values for part in v.split(","))
    return PREFER in tokens


_running: contextvars.ContextVar[bool] = contextvars.ContextVar("capsule_job_running", default=False)


def running() -> bool:
    """Whether this thread runs a job now (its request was admitted, and counted, when accepted)."""
    return _running.get()


def wanted(route: routes.Route, event: dict[str, Any], body: dict[str, Any] | None) -> bool:
    """Whether this request becomes a job: never while a job itself runs, nor where no worker is
    installed (a test, a library caller): there the route answers synchronously, as it always did
    (``Prefer`` is a preference the server may decline, RFC 7240)."""
    if route.name not in ROUTES or _running.get() or dispatcher() is None:
        return False
    return prefers_async(event) or over_budget(route.name, event, body)


def _raw(event: dict[str, Any]) -> bytes:
    import base64

    body = event.get("body") or ""
    return base64.b64decode(body) if event.get("isBase64Encoded") else body.encode("utf-8", "surrogatepass")


def precheck(route: str, event: dict[str, Any]) -> None:
    """What a route refuses whole beyond its schema, checked before a job is accepted: an import
    whose first line is not the header (capsule.transfer.importer.check_header)."""
    if route == "import_data":
        from capsule.transfer.format import read_lines
        from capsule.transfer.importer import check_header

        check_header(next(iter(read_lines(io.BytesIO(_raw(event)))), None))


# ---- who submitted it -----------------------------------------------------------------------------


def principal_of(event: dict[str, Any]) -> str:
    """Who sent the request, as a job remembers it: an IAM identity as the tenant's rule names it
    (a role, not the session, whose name renews with the credentials: functions.tenancy), or the
    API key (token) by name."""
    authorizer = ((event.get("requestContext") or {}).get("authorizer")) or {}
    iam = authorizer.get("iam")
    if isinstance(iam, dict) and (iam.get("userArn") or iam.get("userId")):
        return "iam:" + str(principal_tenant(iam, keep_sessions=per_session()))
    context = authorizer.get("lambda") or {}
    return f"key:{context.get('key')}" if context.get("key") else "token"


KEPT_HEADERS = frozenset({"content-type"})  # nothing else is replayed: no credential, no preference


def stored_request(event: dict[str, Any]) -> dict[str, Any]:
    """The event as the worker replays it: no credentials, no Prefer, no Idempotency-Key."""
    kept: dict[str, Any] = {
        k: event[k] for k in ("version", "routeKey", "rawPath", "rawQueryString", "body") if k in event
    }
    for name in ("queryStringParameters", "pathParameters"):
        if event.get(name):
            kept[name] = event[name]
    kept["isBase64Encoded"] = bool(event.get("isBase64Encoded"))
    kept["headers"] = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() in KEPT_HEADERS}
    kept["requestContext"] = dict(event.get("requestContext") or {})
    return kept


# ---- the answers ----------------------------------------------------------------------------------


class JobAccepted(BaseModel):
    id: str = Field(description="The job's id (opaque)")
    operation: str = Field(description="The route it runs: ingest, import_data or detect_patterns")
    status: str = Field(description="queued")
    location: str = Field(description="Where to poll: GET this path until status is succeeded or failed")
    explanation: str


class JobView(BaseModel):
    id: str
    operation: str
    status: str = Field(description="queued, running, succeeded or failed")
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    status_code: int | None = Field(None, description="Once done: the status the route would have answered")
    result: dict[str, Any] | None = Field(None, description="Once succeeded: the route's answer, as it would be")
    error: dict[str, Any] | None = Field(None, description="Once failed: the route's error (code, message, details)")
    explanation: str


def location(job_id: str) -> str:
    return f"/v1/jobs/{job_id}"


def _at(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


def view(job: Job) -> JobView:
    response = job.response or {}
    status_code = response.get("statusCode") if job.status in DONE else None
    try:
        answer = json.loads(response.get("body") or "null") if job.status in DONE else None
    except ValueError:
        answer = None
    result = answer if job.status == SUCCEEDED and isinstance(answer, dict) else None
    error = answer.get("error") if job.status == FAILED and isinstance(answer, dict) else None
    said = {
        "queued": "accepted; not started yet",
        "running": f"running since {_at(job.started_at)} (attempt {job.attempts})",
        "succeeded": f"done at {_at(job.finished_at)}: result is the route's answer",
        "failed": f"failed at {_at(job.finished_at)}: error is the route's error",
    }[job.status]
    return JobView(
        id=job.id,
        operation=job.operation,
        status=job.status,
        created_at=_at(job.created_at) or datetime.now(UTC),
        started_at=_at(job.started_at),
        finished_at=_at(job.finished_at),
        status_code=status_code,
        result=result,
        error=error if isinstance(error, dict) else None,
        explanation=f"{job.operation} job {said}",
    )


def _answer(status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "body": json.dumps(payload, ensure_ascii=False),
        "isBase64Encoded": False,
    }


def _error(exc: CapsuleError) -> dict[str, Any]:
    retry = getattr(exc, "retry_after_s", None)
    return _answer(exc.status, {"error": exc.to_dict()}, {"Retry-After": str(retry)} if retry is not None else None)


# ---- the store --------------------------------------------------------------------------------------

_stores: dict[int, JobStore] = {}
_lock = threading.Lock()


def store_for(memories: Any) -> JobStore:
    """The jobs' store in the same database as a memory store (capsule.store.sides), migrated once
    per process."""
    with _lock:
        found = _stores.get(id(memories))
        if found is None:
            from capsule.store.sides import job_store

            found = job_store(memories)
            _stores.clear()  # one service per process: a test's next service replaces the last one
            _stores[id(memories)] = found
        return found


# ---- accepting ------------------------------------------------------------------------------------


class Dispatcher(Protocol):
    def dispatch(self, tenant: str, job_id: str) -> None:
        """Have the job run (raises when it could not be handed over)."""
        ...


_dispatcher: Dispatcher | None = None


def set_dispatcher(chosen: Dispatcher | None) -> None:
    """Use ``chosen`` for this process's jobs (functions.job_worker installs the local one; None:
    the environment's choice)."""
    global _dispatcher
    _dispatcher = chosen


def dispatcher() -> Dispatcher | None:
    """The dispatcher installed, else the worker function ``CAPSULE_JOB_FUNCTION`` names (hosted),
    else None (no worker: requests run synchronously)."""
    global _dispatcher
    if _dispatcher is None and os.environ.get(FUNCTION_VARIABLE):
        _dispatcher = LambdaDispatcher(os.environ[FUNCTION_VARIABLE])
    return _dispatcher


def accept(
    route: routes.Route,
    event: dict[str, Any],
    tenant: str,
    store: JobStore,
    dispatcher: Dispatcher,
    *,
    clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """Keep the (validated) request as a job, hand it over, and answer 202 (or 503 when the
    hand-over failed: the job is then failed, not started)."""
    now = clock()
    job = Job(
        id="job_" + secrets.token_urlsafe(18),
        tenant=tenant,
        principal=principal_of(event),
        operation=route.name,
        request=stored_request(event),
        status=QUEUED,
        created_at=now,
        expires_at=now + TTL_S,
    )
    store.create(job)
    _sweep(store, now)
    try:
        dispatcher.dispatch(tenant, job.id)
    except Exception as exc:
        log.warning("a job could not be started: %s", exc)
        refusal = Unavailable("the job could not be started (nothing was done); send the request again")
        refusal.retry_after_s = 5
        store.finish(tenant, job.id, status=FAILED, response=_error(refusal), now=clock())
        return _error(refusal)
    where = location(job.id)
    accepted = JobAccepted(
        id=job.id,
        operation=job.operation,
        status=QUEUED,
        location=where,
        explanation=f"{route.name} accepted as a job: GET {where} until its status is succeeded or failed",
    )
    headers = {"Location": where, "Retry-After": str(POLL_AFTER_S)}
    if prefers_async(event):
        headers["Preference-Applied"] = PREFER
    return _answer(202, accepted.model_dump(), headers)


class Accepted(Exception):  # noqa: N818 - not an error: how a validated request leaves the resolver
    """Raised by the accepting resolver's endpoint (functions.app) with the 202 (or 503) it answers:
    the request passed the route's own validation and was kept as a job instead of being run."""

    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__(response["statusCode"])
        self.response = response


_accepted = 0


def _sweep(store: JobStore, now: float) -> None:
    """Forget expired jobs every PURGE_EVERY accepted (SQLite has no TTL index)."""
    global _accepted
    _accepted += 1
    if _accepted % PURGE_EVERY == 0:
        try:
            store.purge(now)
        except CapsuleError as exc:  # the job in hand is kept: the next sweep tries again
            log.warning("expired jobs could not be removed: %s", exc)


def read(
    tenant: str,
    job_id: str,
    *,
    caller: str,
    unrestricted: bool,
    store: JobStore,
    now: float,
    revive: Dispatcher | None = None,
) -> JobView:
    """The job, for the caller who submitted it or one who may see all of the tenant (a full,
    unscoped admin); any other job is the 404 of one that does not exist. A job no worker holds
    any more (running past its lease: the worker died; queued for a lease: the hand-over was lost)
    is handed to ``revive`` again: a poll is what notices it, hosted as locally."""
    job = store.get(tenant, job_id, now=now)
    if job is None or not (job.principal == caller or unrestricted):
        raise NotFound(f"no such job: {job_id}")
    if revive is not None and abandoned(job, now):
        try:
            revive.dispatch(tenant, job_id)
        except Exception as exc:  # the poll still answers; the next one tries again
            log.warning("an abandoned job could not be handed over again: %s", exc)
    return view(job)


def abandoned(job: Job, now: float) -> bool:
    """Whether no live worker can hold the job (it is then worth handing over again)."""
    if job.status == RUNNING:
        return job.lease_until is not None and job.lease_until <= now
    return job.status == QUEUED and now - job.created_at > LEASE_S


# ---- running ----------------------------------------------------------------------------------------


@dataclass
class WorkerContext:
    """A Lambda context's remaining time, for a job run by a local thread (capsule serve)."""

    seconds: float
    function_name: str = "capsule-job"
    aws_request_id: str = "job"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:capsule-job"
    log_group_name: str = "local"
    log_stream_name: str = "local"

    def __post_init__(self) -> None:
        self._until = time.monotonic() + self.seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._until - time.monotonic()) * 1000))


Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def run(
    tenant: str,
    job_id: str,
    *,
    store: JobStore,
    handler: Callable[[str], Handler],
    context: Any,
    clock: Callable[[], float] = time.time,
) -> str | None:
    """Claim the job and run it through its route's handler (``handler(route name)``), recording the answer. The status it
    ended with, or None when there was nothing to run (done, held by a live worker, unknown)."""
    job = store.claim(tenant, job_id, now=clock(), lease_s=LEASE_S)
    if job is None:
        return None
    if job.attempts > MAX_ATTEMPTS:
        stopped = Unavailable(f"the job's worker stopped {job.attempts - 1} times before it finished")
        store.finish(tenant, job_id, status=FAILED, response=_error(stopped), now=clock())
        return FAILED
    token = _running.set(True)
    try:
        event = {**job.request, "requestContext": {**job.request.get("requestContext", {}), "requestId": job.id}}
        response = handler(job.operation)(event, context)
    except Exception as exc:  # the handler maps every error; this is a bug, recorded as the route would answer
        log.exception("a job failed unexpectedly")
        response = _error(CapsuleError(f"internal error ({type(exc).__name__}); the job id is in the logs"))
    finally:
        _running.reset(token)
    status = SUCCEEDED if 200 <= int(response.get("statusCode", 500)) < 300 else FAILED
    store.finish(tenant, job_id, status=status, response=response, now=clock())
    return status


# ---- dispatchers --------------------------------------------------------------------------------------


class LambdaDispatcher:
    """Hosted: invoke the worker function asynchronously with the tenant and the job's id only (an
    asynchronous payload is limited to 256 KB; the request is in the store)."""

    def __init__(self, function_name: str, client: Any = None) -> None:
        self.function_name = function_name
        self._client = client

    def dispatch(self, tenant: str, job_id: str) -> None:
        if self._client is None:
            import boto3

            self._client = boto3.client("lambda")
        answer = self._client.invoke(
            FunctionName=self.function_name,
            InvocationType="Event",
            Payload=json.dumps({"tenant": tenant, "job": job_id}).encode(),
        )
        if int(answer.get("StatusCode", 0)) != 202:
            raise Unavailable(f"the worker function did not accept the job (status {answer.get('StatusCode')})")


class ThreadDispatcher:
    """Local: one thread of this process runs the jobs, one at a time, in the order handed over."""

    def __init__(self, runner: Callable[[str, str], Any]) -> None:
        self._runner = runner
        self._queue: queue.Queue[tuple[str, str]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def dispatch(self, tenant: str, job_id: str) -> None:
        with self._start:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="capsule-jobs", daemon=True)
                self._thread.start()
        self._queue.put((tenant, job_id))

    def _work(self) -> None:
        while True:
            tenant, job_id = self._queue.get()
            try:
                self._runner(tenant, job_id)
            except Exception:  # a store that failed: the job's lease ends and it is taken up again
                log.exception("a job could not be run")
            finally:
                self._queue.task_done()

    def join(self) -> None:
        """Wait until every job handed over has run (tests)."""
        self._queue.join()


def resume(
    store: JobStore, dispatcher: Dispatcher, *, clock: Callable[[], float] = time.time, limit: int = 1000
) -> int:
    """Hand over again the jobs a stopped server left queued or running past their lease, and forget
    the expired ones (on start)."""
    store.purge(clock())
    found = store.pending(now=clock(), limit=limit)
    for tenant, job_id in found:
        dispatcher.dispatch(tenant, job_id)
    return len(found)


__all__ = [
    "ROUTES",
    "Accepted",
    "Dispatcher",
    "JobAccepted",
    "JobView",
    "LambdaDispatcher",
    "ThreadDispatcher",
    "WorkerContext",
    "accept",
    "dispatcher",
    "over_budget",
    "prefers_async",
    "read",
    "resume",
    "run",
    "set_dispatcher",
    "store_for",
    "wanted",
]
