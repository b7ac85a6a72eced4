"""A small Python client for the Capsule Memory HTTP API, hosted (API Gateway, SigV4) or local.

One method per API operation; each validates its request with the same model the server
uses (a bad request fails here, before any network call) and returns the typed result
model from :mod:`capsule.core.models`::

    from mcp_client.client import CapsuleClient
    from mcp_client.auth import SigV4Auth

    url = "https://abc123.execute-api.eu-west-1.amazonaws.com"
    client = CapsuleClient(url, auth=SigV4Auth.for_url(url))
    client.store({"project": "api", "content": "Use BEGIN IMMEDIATE for SQLite writes"})
    for hit in client.search({"project": "api", "query": "sqlite deadlock"}).results:
        print(hit.score, hit.content)

Failures are :mod:`capsule.core.errors` exceptions chosen by the HTTP status (422 InvalidInput,
401 Unauthorized, 403 Forbidden, 404 NotFound, ...), carrying the server's message. A 429,
a 5xx, a timeout or a connection closed before the answer is retried with exponential backoff
and full jitter. A write the server does not deduplicate by content (feedback, solution_apply,
pattern_link, update, revert, a new solution, mining: ``keyed=True``) is sent with one
``Idempotency-Key`` for the whole logical call, so its retries are answered with the first
success and never do the work twice (functions.idempotency); a write sent without a key
(``idempotent=False``) is retried only when the server says it did nothing (429, 503) or the
connection was never made. A call's retries stop once its time budget (:attr:`Retry.budget_s`)
is spent, each attempt's timeout cut to what is left, so a tool call waits a bounded time.
A request the server accepts as a job (202, functions.async_jobs) is never sent again: the client
polls the job with backoff for up to ``job_wait_s`` and returns its result as if the call had been
synchronous (or raises the route's error); past that it raises :class:`StillRunning` naming the job.
Calls share kept-alive connections (:mod:`mcp_client.transport`). Credentials are never logged.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from pydantic import BaseModel, ValidationError

from capsule.core import errors, models
from capsule.core.fielderrors import validate
from capsule.governance import models as gm
from capsule.learning import models as lm

from .auth import Auth, NoAuth
from .transport import Dropped, NotConnected, PooledTransport, Response, TimedOut

log = logging.getLogger("capsule.client")
M = TypeVar("M", bound=BaseModel)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_WHY = {NotConnected: "not connected", Dropped: "connection closed", TimedOut: "timed out"}  # for the log
# Statuses after which the server has certainly changed nothing.
NOTHING_DONE_STATUSES = frozenset({429, 503})
IDEMPOTENCY_HEADER = "Idempotency-Key"
_ERRORS_BY_STATUS: dict[int, type[errors.CapsuleError]] = {
    400: errors.InvalidInput,
    413: errors.PayloadTooLarge,
    422: errors.InvalidInput,
    401: errors.Unauthorized,
    403: errors.Forbidden,
    404: errors.NotFound,
    409: errors.Conflict,
    412: errors.PreconditionFailed,
    429: errors.Unavailable,
    503: errors.Unavailable,
}


# A request answered 202 became a job: polled from the first Retry-After (at least this), each
# pause 1.5 times the last, at most the cap, within the client's job_wait_s.
JOB_POLL_FIRST_S, JOB_POLL_GROWTH, JOB_POLL_CAP_S = 0.5, 1.5, 5.0


class StillRunning(errors.CapsuleError):
    """The request became a job that had not finished when the client stopped waiting for it."""

    code = "job_running"
    status = 202


@dataclass(frozen=True)
class Retry:
    """Exponential backoff with full jitter: attempt n waits random() * min(cap, base * 2**n)."""

    attempts: int = 4  # total tries, the first included
    base_s: float = 0.25
    cap_s: float = 4.0
    budget_s: float = 75.0  # one call's whole wait, its tries and pauses included
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    random: Callable[[], float] = field(default=random.random, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        wait = self.random() * min(self.cap_s, self.base_s * 2**attempt)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.cap_s))
        return wait


def error_for(status: int, body: bytes) -> errors.CapsuleError:
    """Our exception for an error response: ``{"error": {code, message, details}}`` or
    API Gateway's own ``{"message": ...}``."""
    message, details = None, None
    try:
        data = json.loads(body or b"null")
    except ValueError:
        data = None
    if isinstance(data, dict):
        inner = data.get("error") if isinstance(data.get("error"), dict) else data
        message, details = inner.get("message") or inner.get("Message"), inner.get("details")
    if not message:
        message = body.decode("utf-8", "replace")[:300].strip() or f"HTTP {status}"
    cls = _ERRORS_BY_STATUS.get(status) or (errors.Unavailable if status >= 500 else errors.InvalidInput)
    error = cls(f"{message} (HTTP {status})", details=details)
    error.status = status
    return error


class CapsuleClient:
    """The Capsule Memory API over HTTP. ``auth`` signs each request; ``send`` is the
    transport (by default one :class:`~mcp_client.transport.PooledTransport` per client, whose
    connections every thread of the caller shares; tests and callers may pass their own)."""

    def __init__(
        self,
        base_url: str,
        *,
        auth: Auth | None = None,
        timeout_s: float = 30.0,
        retry: Retry | None = None,
        send: Callable[..., Response] | None = None,
        user_agent: str = "capsule-memory-client/0.1",
        job_wait_s: float = 120.0,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise errors.InvalidInput(f"the API URL must start with http:// or https://, got {base_url!r}", field="url")
        self.base_url = base_url.rstrip("/")
        self.auth = auth or NoAuth()
        self.timeout_s = timeout_s
        self.retry = retry or Retry()
        self._send = send or PooledTransport(self.base_url)
        self._user_agent = user_agent
        self.job_wait_s = job_wait_s  # how long a call waits for a job its request became (202)

    def __repr__(self) -> str:
        return f"CapsuleClient({self.base_url!r}, auth={self.auth!r})"

    def close(self) -> None:
        """Close the kept connections; the client stays usable (the next call reconnects)."""
        close = getattr(self._send, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> CapsuleClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the transport -----------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        idempotent: bool = True,
        keyed: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """Send one request (retrying as the class docstring says) and return the decoded JSON.
        ``keyed``: send an ``Idempotency-Key`` (one for every try of this call), which makes the
        request safe to retry; ``idempotent=False`` without it: retried only when nothing was done."""
        url = self.base_url + path
        params = {
            k: ("true" if v is True else "false" if v is False else v)
            for k, v in (query or {}).items()
            if v is not None
        }
        if params:
            url += "?" + urlencode(params, quote_via=quote)
        data = b"" if body is None else json.dumps(body, separators=(",", ":"), default=str).encode()
        base_headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        if body is not None:
            base_headers["Content-Type"] = "application/json"
        base_headers.update(headers or {})  # signed with the rest
        if keyed:  # one key for the logical call: a retry is answered, not done again
            base_headers.setdefault(IDEMPOTENCY_HEADER, uuid.uuid4().hex)
            idempotent = True
        started = self.retry.clock()
        for attempt in range(self.retry.attempts):
            last = attempt == self.retry.attempts - 1
            headers = self.auth.headers(method, url, base_headers, data)  # re-signed: the date moves
            left = self.retry.budget_s - (self.retry.clock() - started)
            try:
                response = self._send(method, url, headers, data, max(0.1, min(self.timeout_s, left)))
            except (NotConnected, Dropped, TimedOut) as exc:
                # Only a connection never made is safe to repeat for a request that counts.
                if last or not (idempotent or isinstance(exc, NotConnected)):
                    raise self._no_answer(method, path, exc) from exc
                if not self._wait(method, path, attempt, f"{_WHY[type(exc)]} ({exc})", started=started):
                    raise self._no_answer(method, path, exc) from exc
                continue
            if response.status < 300:
                answer = json.loads(response.body) if response.body else None
                where = _job_location(response, answer)
                # A 202 is the work accepted as a job (functions.async_jobs): waited for, never sent again.
                return answer if where is None else self._await_job(where, _retry_after(response.headers))
            retryable = response.status in (RETRY_STATUSES if idempotent else NOTHING_DONE_STATUSES) or (
                keyed and response.status == 409 and _in_progress(response.body)
            )
            if last or not retryable:
                raise self._refused(error_for(response.status, response.body))
            if not self._wait(
                method, path, attempt, f"HTTP {response.status}", _retry_after(response.headers), started=started
            ):
                raise self._refused(error_for(response.status, response.body))
        raise AssertionError("unreachable")  # the loop returns or raises

    def _await_job(self, location: str, first_after: float | None) -> Any:
        """Poll the job at ``location`` with backoff until it is done, within :attr:`job_wait_s`:
        its result as the route would have answered, or the route's error; past the bound,
        :class:`StillRunning` naming the job."""
        started, pause = self.retry.clock(), max(JOB_POLL_FIRST_S, min(first_after or 0.0, JOB_POLL_CAP_S))
        job_id = location.rstrip("/").rsplit("/", 1)[-1]
        while True:
            if self.retry.clock() - started + pause > self.job_wait_s:
                raise StillRunning(
                    f"the work is still running as job {job_id} after {self.job_wait_s:g} s; it goes on on the server: "
                    f"ask again later (GET {location})",
                    details=[{"job": job_id, "location": location}],
                )
            self.retry.sleep(pause)
            job = self.request("GET", location)
            if isinstance(job, dict) and job.get("status") == "succeeded":
                return job.get("result")
            if isinstance(job, dict) and job.get("status") == "failed":
                status = int(job.get("status_code") or 500)
                raise self._refused(error_for(status, json.dumps({"error": job.get("error") or {}}).encode()))
            pause = min(pause * JOB_POLL_GROWTH, JOB_POLL_CAP_S)

    def _no_answer(self, method: str, path: str, exc: Exception) -> errors.Unavailable:
        if isinstance(exc, NotConnected):
            return errors.Unavailable(f"cannot reach {self.base_url}: {exc}")
        if isinstance(exc, Dropped):
            return errors.Unavailable(
                f"{method} {path}: the connection closed before the answer ({exc}); it may or may not have been applied"
            )
        return errors.Unavailable(
            f"{method} {path} got no answer in {self.timeout_s:g}s (it may or may not have been applied)"
        )

    def _refused(self, error: errors.CapsuleError) -> errors.CapsuleError:
        """A 401/403 says what this client sent, so the user knows which credential to fix."""
        sent = getattr(self.auth, "sent", None) or getattr(self.auth, "source", None)
        if sent and error.status in (401, 403):
            error.message += f"; this client sent {sent}"
            error.args = (error.message,)
        return error

    def _wait(
        self, method: str, path: str, attempt: int, why: str, retry_after: float | None = None, *, started: float
    ) -> bool:
        """Pause before the next try; False (no pause) when the call's budget would be spent by then."""
        delay = self.retry.delay(attempt, retry_after)
        if self.retry.clock() - started + delay >= self.retry.budget_s:
            log.info("%s %s: %s; not retried: the call's %gs are spent", method, path, why, self.retry.budget_s)
            return False
        log.info("%s %s: %s; retry %d in %.2fs", method, path, why, attempt + 1, delay)
        self.retry.sleep(delay)
        return True

    def _call(self, result: type[M], method: str, path: str, **kwargs: Any) -> M:
        data = self.request(method, path, **kwargs)
        try:
            return result.model_validate(data)
        except ValidationError as exc:
            raise errors.Unavailable(
                f"{method} {path} answered with a {result.__name__} this client cannot read: "
                f"{exc.errors()[0].get('msg')}"
            ) from exc

    @staticmethod
    def _body(model: type[BaseModel], request: Any) -> dict[str, Any]:
        return validate(model, request).model_dump(mode="json", by_alias=True, exclude_unset=True)

    @staticmethod
    def _id(memory_id: str) -> str:
        if not memory_id or len(memory_id) > 128:
            raise errors.InvalidInput("an id is 1-128 characters", field="id")
        return quote(memory_id, safe="")

    # ---- memories ------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/v1/health")

    def store(self, request: models.StoreRequest | Mapping[str, Any]) -> models.StoreResult:
        """Store one memory (deduplicated within 48 hours; may evict the oldest unpinned)."""
        return self._call(models.StoreResult, "POST", "/v1/memories", body=self._body(models.StoreRequest, request))

    def ingest(self, request: models.IngestRequest | Mapping[str, Any]) -> models.IngestResult:
        """Chunk a text and store every chunk."""
        return self._call(
            models.IngestResult, "POST", "/v1/memories/ingest", body=self._body(models.IngestRequest, request)
        )

    def search(self, request: models.SearchRequest | Mapping[str, Any]) -> models.SearchResult:
        """Hybrid search; every hit carries its score components."""
        return self._call(
            models.SearchResult, "POST", "/v1/memories/search", body=self._body(models.SearchRequest, request)
        )

    def list_memories(self, request: models.ListRequest | Mapping[str, Any]) -> models.ListResult:
        """Recent (or pinned) memories of a project, newest first, a page at a time."""
        query = validate(models.ListRequest, request).model_dump(mode="json", exclude_none=True)
        if not query.get("forgotten"):
            query.pop("forgotten", None)  # the default: a server from before the parameter takes the request too
        return self._call(models.ListResult, "GET", "/v1/memories", query=query)

    def get(self, memory_id: str) -> models.MemoryResult:
        return self._call(models.MemoryResult, "GET", f"/v1/memories/{self._id(memory_id)}")

    def pin(self, memory_id: str) -> models.MemoryResult:
        return self._call(models.MemoryResult, "POST", f"/v1/memories/{self._id(memory_id)}/pin")

    def unpin(self, memory_id: str) -> models.MemoryResult:
        return self._call(models.MemoryResult, "POST", f"/v1/memories/{self._id(memory_id)}/unpin")

    def forget(self, memory_id: str, reason: str | None = None, *, force: bool = False) -> models.MemoryResult:
        """Forget (recoverable for 30 days). The reason travels as a query parameter of the DELETE."""
        validate(models.ForgetRequest, {"reason": reason, "force": force})
        return self._call(
            models.MemoryResult,
            "DELETE",
            f"/v1/memories/{self._id(memory_id)}",
            query={"reason": reason, **({"force": True} if force else {})},
        )

    def update(
        self, memory_id: str, request: gm.UpdateRequest | Mapping[str, Any], *, if_match: str | None = None
    ) -> gm.UpdateResult:
        """Change a memory in place; with ``if_match`` (its sha256) refused (412) if it changed since."""
        return self._call(
            gm.UpdateResult,
            "PATCH",
            f"/v1/memories/{self._id(memory_id)}",
            body=self._body(gm.UpdateRequest, request),
            headers=_if_match(if_match),
            keyed=True,
        )

    def history(self, memory_id: str) -> gm.HistoryResult:
        return self._call(gm.HistoryResult, "GET", f"/v1/memories/{self._id(memory_id)}/history")

    def revert(
        self, memory_id: str, request: gm.RevertRequest | Mapping[str, Any], *, if_match: str | None = None
    ) -> gm.UpdateResult:
        return self._call(
            gm.UpdateResult,
            "POST",
            f"/v1/memories/{self._id(memory_id)}/revert",
            body=self._body(gm.RevertRequest, request),
            headers=_if_match(if_match),
            keyed=True,
        )

    def restore(self, memory_id: str) -> models.RestoreResult:
        return self._call(models.RestoreResult, "POST", f"/v1/memories/{self._id(memory_id)}/restore")

    def feedback(self, memory_id: str, request: models.FeedbackRequest | Mapping[str, Any]) -> models.MemoryResult:
        """Vote helpful or not; retried under one Idempotency-Key, so a vote is never counted twice."""
        return self._call(
            models.MemoryResult,
            "POST",
            f"/v1/memories/{self._id(memory_id)}/feedback",
            body=self._body(models.FeedbackRequest, request),
            keyed=True,
        )

    def projects(self) -> models.ProjectsResult:
        return self._call(models.ProjectsResult, "GET", "/v1/projects")

    def set_retention_limit(self, project: str, retention_limit: int) -> models.ProjectsResult:
        validate(models.ListRequest, {"project": project})
        body = self._body(models.ProjectSettingsRequest, {"retention_limit": retention_limit})
        return self._call(models.ProjectsResult, "PUT", "/v1/projects/settings", body={"project": project, **body})

    # ---- learning: solutions (fixpacks) ----------------------------------------

    def create_solution(self, fixpack: lm.Fixpack | Mapping[str, Any]) -> lm.SolutionResult:
        return self._call(lm.SolutionResult, "POST", "/v1/solutions", body=self._body(lm.Fixpack, fixpack), keyed=True)

    def list_solutions(self, request: lm.ListSolutionsRequest | Mapping[str, Any] | None = None) -> lm.SolutionList:
        query = validate(lm.ListSolutionsRequest, request or {}).model_dump(mode="json", exclude_none=True)
        return self._call(lm.SolutionList, "GET", "/v1/solutions", query=query)

    def import_solution(self, fixpack_file: Mapping[str, Any]) -> lm.ImportResult:
        """One fixpack file as it is (ours or the Vector Bridge's): checked here as the server will,
        then sent unchanged, so the keys it keeps under 'extra' are the file's own."""
        body = dict(fixpack_file) if isinstance(fixpack_file, Mapping) else fixpack_file
        lm.read_fixpack_file(body)
        return self._call(lm.ImportResult, "POST", "/v1/solutions/import", body=body, keyed=True)

    def get_solution(self, solution_id: str) -> lm.SolutionResult:
        return self._call(lm.SolutionResult, "GET", f"/v1/solutions/{self._id(solution_id)}")

    def update_solution(self, solution_id: str, fixpack: lm.Fixpack | Mapping[str, Any]) -> lm.SolutionResult:
        return self._call(
            lm.SolutionResult, "PUT", f"/v1/solutions/{self._id(solution_id)}", body=self._body(lm.Fixpack, fixpack)
        )

    def delete_solution(self, solution_id: str) -> lm.DeleteResult:
        return self._call(lm.DeleteResult, "DELETE", f"/v1/solutions/{self._id(solution_id)}")

    # ---- learning: matching and patterns -----------------------------------------

    def solution_search(self, request: lm.SolutionSearchRequest | Mapping[str, Any]) -> lm.SolutionSearchResult:
        """Solutions (fixpacks) whose signatures match an error, best first."""
        return self._call(
            lm.SolutionSearchResult, "POST", "/v1/solutions/search", body=self._body(lm.SolutionSearchRequest, request)
        )

    def solution_apply(self, solution_id: str, request: lm.ApplyRequest | Mapping[str, Any]) -> lm.ApplyResult:
        """Record whether applying a solution worked; retried under one Idempotency-Key, so it counts once."""
        return self._call(
            lm.ApplyResult,
            "POST",
            f"/v1/solutions/{self._id(solution_id)}/apply",
            body=self._body(lm.ApplyRequest, request),
            keyed=True,
        )

    def pattern_detect(self, request: lm.PatternDetectRequest | Mapping[str, Any]) -> lm.PatternDetectResult:
        """Known error patterns an error belongs to, with what fixed them."""
        return self._call(
            lm.PatternDetectResult, "POST", "/v1/patterns/detect", body=self._body(lm.PatternDetectRequest, request)
        )

    def pattern_solutions(self, request: lm.PatternSolutionsRequest | Mapping[str, Any]) -> lm.PatternSolutionsResult:
        """The solutions and fixes linked to one pattern, most successful first."""
        return self._call(
            lm.PatternSolutionsResult,
            "POST",
            "/v1/patterns/solutions",
            body=self._body(lm.PatternSolutionsRequest, request),
        )

    def pattern_link(self, request: lm.PatternLinkRequest | Mapping[str, Any]) -> lm.PatternLinkResult:
        """Record that a solution worked (or not) for a pattern; retried under one Idempotency-Key, counted once."""
        return self._call(
            lm.PatternLinkResult,
            "POST",
            "/v1/patterns/link",
            body=self._body(lm.PatternLinkRequest, request),
            keyed=True,
        )

    def golden_paths(self, request: lm.GoldenPathsRequest | Mapping[str, Any] | None = None) -> lm.GoldenPathsResult:
        """Pattern-fix pairs that worked repeatedly."""
        query = validate(lm.GoldenPathsRequest, request or {}).model_dump(mode="json", exclude_none=True)
        return self._call(lm.GoldenPathsResult, "GET", "/v1/patterns/golden-paths", query=query)

    def detect_patterns(
        self, request: lm.DetectPatternsRequest | Mapping[str, Any] | None = None
    ) -> lm.DetectPatternsResult:
        """Mine the memories for recurring failures now (idempotent)."""
        return self._call(
            lm.DetectPatternsResult,
            "POST",
            "/v1/patterns/mine",
            body=self._body(lm.DetectPatternsRequest, request or {}),
            keyed=True,
        )


def _if_match(sha: str | None) -> dict[str, str]:
    from capsule.governance.models import check_if_match

    return {} if check_if_match(sha) is None else {"If-Match": f'"{check_if_match(sha)}"'}


def _in_progress(body: bytes) -> bool:
    """A 409 that says the same key's first request is still running (worth waiting for)."""
    try:
        data = json.loads(body or b"null")
    except ValueError:
        return False
    inner = data.get("error") if isinstance(data, dict) else None
    return isinstance(inner, dict) and inner.get("code") == "idempotency_in_progress"


def _job_location(response: Response, data: Any) -> str | None:
    """The job a 202 names (its Location, or the body's), None for any other answer."""
    if response.status != 202:
        return None
    header = next((v for k, v in response.headers.items() if k.lower() == "location"), None)
    where = header or (data.get("location") if isinstance(data, dict) else None)
    return where if isinstance(where, str) and where.startswith("/v1/jobs/") else None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


__all__ = ["CapsuleClient", "Retry", "Response", "StillRunning", "error_for"]  # Response: from .transport
