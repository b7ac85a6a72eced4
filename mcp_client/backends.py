"""Where the MCP tools and the hooks send their work: the local store, or the hosted API.

:class:`Backend` is the one interface; :class:`EmbeddedBackend` calls the library on the
local store (no server), :class:`RemoteBackend` proxies to the HTTP API through
:class:`mcp_client.client.CapsuleClient`. Both take and return the same models, so the
tools cannot tell them apart.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from capsule import Settings
from capsule.core import idprefix, models
from capsule.core.errors import CapsuleError, InvalidInput
from capsule.governance import models as gm
from capsule.learning import models as lm
from capsule.runtime.service import build_service
from capsule.service.memory_service import MemoryService

from .auth import Auth, LazyAuth, NoAuth, SigV4Auth
from .auth_choice import AUTO, AuthChoice, bearer_for, check_method, choose_auth
from .client import CapsuleClient, Retry

if TYPE_CHECKING:
    from capsule.learning import LearningService

log = logging.getLogger("capsule.mcp")
LOCAL_TENANT = "local"  # the embedded store's one tenant, as the CLI uses


class Backend(Protocol):
    """Every operation the tools use. Requests are dicts validated by the callee."""

    name: str

    def store(self, request: Mapping[str, Any]) -> models.StoreResult: ...
    def ingest(self, request: Mapping[str, Any]) -> models.IngestResult: ...
    def search(self, request: Mapping[str, Any]) -> models.SearchResult: ...
    def list_memories(self, request: Mapping[str, Any]) -> models.ListResult: ...
    def pin(self, memory_id: str, pinned: bool) -> models.MemoryResult: ...
    def forget(self, memory_id: str, reason: str | None, force: bool = False) -> models.MemoryResult: ...
    def get(self, memory_id: str) -> models.MemoryResult: ...
    def restore(self, memory_id: str) -> models.RestoreResult: ...
    def feedback(self, memory_id: str, request: Mapping[str, Any]) -> models.MemoryResult: ...
    def projects(self) -> models.ProjectsResult: ...
    def update(self, memory_id: str, request: Mapping[str, Any], if_match: str | None) -> gm.UpdateResult: ...
    def history(self, memory_id: str) -> gm.HistoryResult: ...
    def revert(self, memory_id: str, request: Mapping[str, Any], if_match: str | None) -> gm.UpdateResult: ...
    def solution_search(self, request: Mapping[str, Any]) -> lm.SolutionSearchResult: ...
    def solution_apply(self, solution_id: str, request: Mapping[str, Any]) -> lm.ApplyResult: ...
    def pattern_detect(self, request: Mapping[str, Any]) -> lm.PatternDetectResult: ...
    def pattern_solutions(self, request: Mapping[str, Any]) -> lm.PatternSolutionsResult: ...
    def pattern_link(self, request: Mapping[str, Any]) -> lm.PatternLinkResult: ...
    def golden_paths(self, request: Mapping[str, Any]) -> lm.GoldenPathsResult: ...
    def detect_patterns(self, request: Mapping[str, Any]) -> lm.DetectPatternsResult: ...
    def get_solution(self, solution_id: str) -> lm.SolutionResult: ...
    def create_solution(self, fixpack: Mapping[str, Any]) -> lm.SolutionResult: ...
    def new_solution_from_file(self, fixpack: Mapping[str, Any]) -> lm.ImportResult: ...
    def unlimited_project(self, name: str) -> str: ...
    def close(self) -> None: ...


class EmbeddedBackend:
    """The library itself on the local store, as tenant ``local``."""

    name = "embedded"

    def __init__(
        self, service: MemoryService, learning: LearningService | None = None, *, tenant: str = LOCAL_TENANT
    ) -> None:
        self.service = service
        self._learning = learning
        self.tenant = tenant

    @classmethod
    def from_settings(cls, settings: Settings) -> EmbeddedBackend:
        return cls(build_service(settings))

    @property
    def learning(self) -> LearningService:
        """Opened on first use: the memory tools and hooks never pay for it."""
        if self._learning is None:
            from capsule.runtime.learning import build_learning  # the memory tools and hooks never load it

            self._learning = build_learning(self.service)
        return self._learning

    def _id(self, given: str) -> str:
        """The whole id ``given`` names: itself, its first characters (the 12 the CLI prints), or an
        imported Vector Bridge chunk_id (capsule.core.idprefix)."""
        return idprefix.resolve(self.service.store, self.tenant, given)

    def store(self, request: Mapping[str, Any]) -> models.StoreResult:
        return self.service.store_memory(self.tenant, dict(request))

    def ingest(self, request: Mapping[str, Any]) -> models.IngestResult:
        return self.service.ingest(self.tenant, dict(request))

    def search(self, request: Mapping[str, Any]) -> models.SearchResult:
        return self.service.search(self.tenant, dict(request))

    def list_memories(self, request: Mapping[str, Any]) -> models.ListResult:
        return self.service.list_memories(self.tenant, dict(request))

    def pin(self, memory_id: str, pinned: bool) -> models.MemoryResult:
        return self.service.pin(self.tenant, self._id(memory_id), pinned)

    def forget(self, memory_id: str, reason: str | None, force: bool = False) -> models.MemoryResult:
        return self.service.forget(self.tenant, self._id(memory_id), {"reason": reason, "force": force})

    def update(self, memory_id: str, request: Mapping[str, Any], if_match: str | None) -> gm.UpdateResult:
        return self.service.history.update(self.tenant, self._id(memory_id), dict(request), if_match=if_match)

    def history(self, memory_id: str) -> gm.HistoryResult:
        return self.service.history.history(self.tenant, self._id(memory_id))

    def revert(self, memory_id: str, request: Mapping[str, Any], if_match: str | None) -> gm.UpdateResult:
        return self.service.history.revert(self.tenant, self._id(memory_id), dict(request), if_match=if_match)

    def get(self, memory_id: str) -> models.MemoryResult:
        return self.service.get(self.tenant, self._id(memory_id))

    def restore(self, memory_id: str) -> models.RestoreResult:
        return self.service.restore(self.tenant, self._id(memory_id))

    def feedback(self, memory_id: str, request: Mapping[str, Any]) -> models.MemoryResult:
        return self.service.feedback(self.tenant, self._id(memory_id), dict(request))

    def projects(self) -> models.ProjectsResult:
        return self.service.projects(self.tenant)

    def solution_search(self, request: Mapping[str, Any]) -> lm.SolutionSearchResult:
        return self.learning.solution_search(self.tenant, dict(request))

    def solution_apply(self, solution_id: str, request: Mapping[str, Any]) -> lm.ApplyResult:
        return self.learning.solution_apply(self.tenant, solution_id, dict(request))

    def pattern_detect(self, request: Mapping[str, Any]) -> lm.PatternDetectResult:
        return self.learning.pattern_detect(self.tenant, dict(request))

    def pattern_solutions(self, request: Mapping[str, Any]) -> lm.PatternSolutionsResult:
        return self.learning.pattern_solutions(self.tenant, dict(request))

    def pattern_link(self, request: Mapping[str, Any]) -> lm.PatternLinkResult:
        return self.learning.pattern_link(self.tenant, dict(request))

    def golden_paths(self, request: Mapping[str, Any]) -> lm.GoldenPathsResult:
        return self.learning.golden_paths(self.tenant, dict(request))

    def get_solution(self, solution_id: str) -> lm.SolutionResult:
        return self.learning.get_solution(self.tenant, solution_id)

    def create_solution(self, fixpack: Mapping[str, Any]) -> lm.SolutionResult:
        return self.learning.create_solution(self.tenant, dict(fixpack))

    def new_solution_from_file(self, fixpack: Mapping[str, Any]) -> lm.ImportResult:
        """A fixpack as its file writes it (any spelling kept), always a new solution (solution_upsert)."""
        return self.learning.import_solution(self.tenant, dict(fixpack), source="mcp", always_new=True)

    def unlimited_project(self, name: str) -> str:
        """The project ``name`` resolves to, with no rolling limit unless its user set one: the Vector
        Bridge, whose callers write through here, had none (COMPAT §6)."""
        return self.service.ensure_project(self.tenant, name, unlimited=True)

    def detect_patterns(self, request: Mapping[str, Any]) -> lm.DetectPatternsResult:
        return self.learning.detect_patterns(self.tenant, dict(request))

    def close(self) -> None:
        close = getattr(self.service.store, "close", None)
        if close:
            close()


class RemoteBackend:
    """A thin proxy: each operation is one call of the HTTP client."""

    name = "remote"

    def __init__(self, client: CapsuleClient) -> None:
        self.client = client

    def store(self, request: Mapping[str, Any]) -> models.StoreResult:
        return self.client.store(request)

    def ingest(self, request: Mapping[str, Any]) -> models.IngestResult:
        return self.client.ingest(request)

    def search(self, request: Mapping[str, Any]) -> models.SearchResult:
        return self.client.search(request)

    def list_memories(self, request: Mapping[str, Any]) -> models.ListResult:
        return self.client.list_memories(request)

    def pin(self, memory_id: str, pinned: bool) -> models.MemoryResult:
        return self.client.pin(memory_id) if pinned else self.client.unpin(memory_id)

    def forget(self, memory_id: str, reason: str | None, force: bool = False) -> models.MemoryResult:
        return self.client.forget(memory_id, reason, force=force)

    def update(self, memory_id: str, request: Mapping[str, Any], if_match: str | None) -> gm.UpdateResult:
        return self.client.update(memory_id, request, if_match=if_match)

    def history(self, memory_id: str) -> gm.HistoryResult:
        return self.client.history(memory_id)

    def revert(self, memory_id: str, request: Mapping[str, Any], if_match: str | None) -> gm.UpdateResult:
        return self.client.revert(memory_id, request, if_match=if_match)

    def get(self, memory_id: str) -> models.MemoryResult:
        return self.client.get(memory_id)

    def restore(self, memory_id: str) -> models.RestoreResult:
        return self.client.restore(memory_id)

    def feedback(self, memory_id: str, request: Mapping[str, Any]) -> models.MemoryResult:
        return self.client.feedback(memory_id, request)

    def projects(self) -> models.ProjectsResult:
        return self.client.projects()

    def solution_search(self, request: Mapping[str, Any]) -> lm.SolutionSearchResult:
        return self.client.solution_search(request)

    def solution_apply(self, solution_id: str, request: Mapping[str, Any]) -> lm.ApplyResult:
        return self.client.solution_apply(solution_id, request)

    def pattern_detect(self, request: Mapping[str, Any]) -> lm.PatternDetectResult:
        return self.client.pattern_detect(request)

    def pattern_solutions(self, request: Mapping[str, Any]) -> lm.PatternSolutionsResult:
        return self.client.pattern_solutions(request)

    def pattern_link(self, request: Mapping[str, Any]) -> lm.PatternLinkResult:
        return self.client.pattern_link(request)

    def golden_paths(self, request: Mapping[str, Any]) -> lm.GoldenPathsResult:
        return self.client.golden_paths(request)

    def get_solution(self, solution_id: str) -> lm.SolutionResult:
        return self.client.get_solution(solution_id)

    def create_solution(self, fixpack: Mapping[str, Any]) -> lm.SolutionResult:
        return self.client.create_solution(fixpack)

    def new_solution_from_file(self, fixpack: Mapping[str, Any]) -> lm.ImportResult:
        # The API's import dedupes on title and category: a hosted solution_upsert updates that one.
        return self.client.import_solution(fixpack)

    def unlimited_project(self, name: str) -> str:
        # The API has no "unless its user set one" setting yet: a hosted project keeps its limit, and a
        # write that evicts names what it evicted in its answer.
        return name

    def detect_patterns(self, request: Mapping[str, Any]) -> lm.DetectPatternsResult:
        return self.client.detect_patterns(request)

    def close(self) -> None:
        self.client.close()  # its kept-alive connections


@dataclass(frozen=True)
class Connection:
    """How to reach the memory: a URL (remote) or none (embedded), and how to sign."""

    url: str | None = None
    auth: str | None = None  # auto (None) | sigv4 | apikey | none: see auth_choice
    region: str | None = None
    profile: str | None = None
    api_key_file: str | None = None
    data_dir: str | None = None
    embedder: str | None = None
    timeout_s: float = 30.0  # remote: per request
    attempts: int = 4  # remote: tries per request, the first included

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, embedded: bool = False, **given: Any) -> Connection:
        """Arguments win over the environment: CAPSULE_MEMORY_URL, CAPSULE_AUTH.

        An unknown auth method is refused here, naming the nearest one; leaving it unset (or
        ``auto``) lets the URL decide (:func:`mcp_client.auth_choice.choose_auth`).
        """
        environ = os.environ if environ is None else environ
        given = {k: v for k, v in given.items() if v is not None}
        url = None if embedded else given.pop("url", None) or environ.get("CAPSULE_MEMORY_URL") or None
        given.pop("url", None)
        auth = check_method(given.pop("auth", None) or environ.get("CAPSULE_AUTH"))
        return cls(url=None if url is None else check_url(url), auth=None if auth == AUTO else auth, **given)


def check_url(url: str) -> str:
    """A URL the client can call; refused at startup, since no later retry could fix it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(
            f"the memory URL (--url or CAPSULE_MEMORY_URL) must be http:// or https:// with a host, got {url!r}",
            field="url",
        )
    return url


def auth_choice(conn: Connection) -> AuthChoice:
    """How ``conn`` signs, and why (``conn.url`` must be set)."""
    assert conn.url is not None
    return choose_auth(conn.url, conn.auth, sigv4_options=bool(conn.region or conn.profile))


def make_auth(conn: Connection, environ: Mapping[str, str] | None = None) -> Auth:
    """The auth for ``conn``, made on first use (a missing credential fails each call, saying
    what to set, rather than the process)."""
    if conn.url is None:
        return NoAuth()
    url = conn.url
    choice = auth_choice(conn)
    if choice.method == "sigv4":

        def make() -> Auth:
            return SigV4Auth.for_url(url, region=conn.region, profile=conn.profile, environ=environ)
    elif choice.method == "apikey":

        def make() -> Auth:
            return bearer_for(url, key_file=conn.api_key_file, data_dir=conn.data_dir, environ=environ)
    else:
        return NoAuth()
    return LazyAuth(make, f"{choice.method}: {choice.reason}")


def open_backend(conn: Connection, environ: Mapping[str, str] | None = None) -> Backend:
    """The remote backend when the connection has a URL, else the embedded one.

    Never fails for settings a user can fix while it runs (a missing key, a store not up
    yet): it then returns a :class:`RetryingOpen` whose every call says why, so each MCP tool
    call, ``memory_projects`` included, carries the reason.
    """
    try:
        return _open(conn, environ)
    except CapsuleError as exc:
        log.warning("the memory backend is not available yet: %s", exc.message)
        return RetryingOpen(lambda: _open(conn, environ))


def _open(conn: Connection, environ: Mapping[str, str] | None) -> Backend:
    if conn.url:
        client = CapsuleClient(
            conn.url, auth=make_auth(conn, environ), timeout_s=conn.timeout_s, retry=Retry(attempts=conn.attempts)
        )
        return RemoteBackend(client)
    settings = Settings.from_env(environ, data_dir=conn.data_dir, embedder=conn.embedder)
    return EmbeddedBackend.from_settings(settings)


class RetryingOpen:
    """A backend that could not be opened: each operation tries to open it again and, until that
    works, raises why. Looking an operation up never fails, so a caller that takes the method
    before calling it (``run(backend.projects)``) still gets the reason from the call."""

    name = "retrying"

    def __init__(self, opener: Callable[[], Backend]) -> None:
        self._opener = opener
        self._backend: Backend | None = None

    def _opened(self) -> Backend:
        if self._backend is None:
            self._backend = self._opener()
        return self._backend

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)

        def operation(*args: Any, **kwargs: Any) -> Any:
            return getattr(self._opened(), name)(*args, **kwargs)

        return operation

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()


__all__ = [
    "Backend",
    "Connection",
    "EmbeddedBackend",
    "RemoteBackend",
    "auth_choice",
    "make_auth",
    "open_backend",
    "RetryingOpen",
    "LOCAL_TENANT",
]
