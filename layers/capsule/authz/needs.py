"""What each operation needs: its access level, its reach and the objects it reads or changes.

Reaches (how far one call goes, what :func:`capsule.authz.check.authorize` asks of a principal):

- ``memory``: the memory named by id: in the principal's projects and subjects, visible to it
  (and, for an update, what it becomes too);
- ``project``: a project named in the request, within the principal's projects; a memory it
  writes must be one the principal could read back (project, subject, visibility); without a
  project the call spans the tenant (refused to a principal limited to projects or subjects);
- ``project_all``: as ``project``, and it reads or changes every memory of the project whatever
  its subject or visibility (export, sync changes, the project's settings: a retention limit
  evicts, a policy rewrites; the capture queue, whose candidates carry no subject or
  visibility): refused to a principal limited to subjects or to what it sees;
- ``filtered``: the operation narrows what it returns to the principal's reach (list, search;
  the audit log, whose records a limited principal sees only of memories it can read,
  :func:`capsule.authz.derived.audit_keep`);
- ``derived``: the answer is derived from memories of any project (patterns, golden paths):
  allowed, and narrowed by :mod:`capsule.authz.derived` to what is derived from memories the
  principal can read;
- ``tenant``: every memory of every project (import, sync apply, mining, candidates by id,
  data keys, principal scopes, usage counts): only a principal limited in nothing but its access level;
- ``any``: the tenant's knowledge kept apart from memories (solutions, health, the caller's own
  scope).

An operation not declared here needs ``admin`` of the whole tenant (:data:`UNDECLARED`), and a
test walks the route table so that a new route declares its needs.
"""

from __future__ import annotations

from dataclasses import dataclass

ACCESS = ("read", "write", "admin")
REACHES = ("memory", "project", "project_all", "filtered", "derived", "tenant", "any")
OBJECTS = (
    "memory",
    "project_settings",
    "pattern",
    "golden_path",
    "candidate",
    "solution",
    "export_row",
    "sync_row",
    "history",
    "audit",
    "scope_rules",
    "data_key",
    "service",
    "usage",
    "job",
)


@dataclass(frozen=True, slots=True)
class Need:
    access: str  # read | write | admin
    reach: str  # one of REACHES
    reads: tuple[str, ...] = ()  # object kinds it hands back (OBJECTS)
    changes: tuple[str, ...] = ()  # object kinds it may change (OBJECTS)

    def __post_init__(self) -> None:
        assert self.access in ACCESS and self.reach in REACHES, self
        assert set(self.reads) | set(self.changes) <= set(OBJECTS), self

    @property
    def derived(self) -> bool:
        """Whether its answer may carry objects derived from memories (narrowed for a limited principal)."""
        return bool({"pattern", "golden_path"} & set(self.reads))


M, P, S = ("memory",), ("pattern",), ("solution",)

NEEDS: dict[str, Need] = {
    "health": Need("read", "any", reads=("service",)),
    "openapi": Need("read", "any", reads=("service",)),  # public: the route takes no credentials at all
    "whoami": Need("read", "any", reads=("scope_rules",)),
    # memories
    "store": Need("write", "project", reads=M, changes=("memory", "audit")),  # a store may evict: audited
    "ingest": Need("write", "project", reads=M, changes=("memory", "audit")),
    "list": Need("read", "filtered", reads=M),
    "search": Need("read", "filtered", reads=M),
    "projects": Need("read", "filtered", reads=("project_settings",)),
    "get": Need("read", "memory", reads=M),
    "forget": Need("write", "memory", reads=M, changes=("memory", "audit")),
    "pin": Need("write", "memory", reads=M, changes=("memory", "audit")),
    "unpin": Need("write", "memory", reads=M, changes=("memory", "audit")),
    "restore": Need("write", "memory", reads=M, changes=("memory", "audit")),
    "feedback": Need("write", "memory", reads=M, changes=M),
    "update": Need("write", "memory", reads=M, changes=("memory", "history", "audit")),
    "history": Need("read", "memory", reads=("history",)),
    # the tenant's audit log: a record is about one memory, and shown to a limited principal only
    # when that memory is one it can read (in its projects; its subject and visibility too)
    "audit": Need("read", "filtered", reads=("audit",)),
    # the tenant's request counts: tenant-wide (every project's activity, private work too), so
    # only a principal limited in nothing but its access level reads them
    "usage": Need("read", "tenant", reads=("usage",)),
    "revert": Need("write", "memory", reads=("history",), changes=("memory", "history", "audit")),
    # the capture queue: candidates carry no subject or visibility, so only a principal that
    # reads every memory of the project sees or decides them
    "capture": Need("write", "project", reads=("candidate",), changes=("candidate", "memory")),
    "capture_settings": Need("admin", "project_all", changes=("project_settings", "memory")),
    "candidates": Need("read", "project_all", reads=("candidate",)),
    "candidate_approve": Need("write", "tenant", reads=("candidate",), changes=("candidate", "memory")),
    "candidate_reject": Need("write", "tenant", reads=("candidate",), changes=("candidate",)),
    # a retention limit evicts and the secrets, PII and encryption policies rewrite every memory
    # of the project, whoever it is about
    "project_settings": Need(
        "admin", "project_all", reads=("project_settings",), changes=("project_settings", "memory", "audit")
    ),
    "rotate_data_key": Need("admin", "tenant", changes=("data_key", "memory", "audit")),
    # solutions: the tenant's shared knowledge, not kept per project
    "solution_create": Need("write", "any", reads=S, changes=S),
    "solution_list": Need("read", "any", reads=S),
    "solution_import": Need("write", "any", reads=S, changes=S),
    "solution_search": Need("read", "any", reads=S),
    "solution_get": Need("read", "any", reads=S),
    "solution_update": Need("write", "any", reads=S, changes=S),
    "solution_delete": Need("write", "any", changes=S),
    "solution_apply": Need("write", "derived", reads=("solution", "pattern"), changes=("solution", "pattern")),
    # patterns: derived from the memories of every project
    "pattern_detect": Need("read", "derived", reads=("pattern", "golden_path", "memory", "solution")),
    "pattern_solutions": Need("read", "derived", reads=("pattern", "golden_path", "memory", "solution")),
    "pattern_link": Need("write", "derived", reads=("pattern", "solution"), changes=("pattern",)),
    "golden_paths": Need("read", "derived", reads=("golden_path", "pattern", "memory", "solution")),
    "detect_patterns": Need("write", "tenant", reads=("pattern",), changes=("pattern", "golden_path")),
    # data in and out
    "export": Need(
        "admin", "project_all", reads=("export_row", "memory", "audit", "history", "pattern", "golden_path", "solution")
    ),
    "import_data": Need("admin", "tenant", changes=("memory", "audit", "history", "pattern", "solution")),
    "sync_changes": Need("admin", "project_all", reads=("sync_row", "memory")),
    "sync_apply": Need("admin", "tenant", reads=("sync_row",), changes=("memory", "sync_row")),
    # an asynchronous job: read by the caller who submitted it (or a full admin of the tenant;
    # functions.async_jobs.read), whatever its scope, which was checked when it was accepted and
    # again when it ran
    "job_get": Need("read", "any", reads=("job",)),
    # who may do what
    "principal_scopes": Need("admin", "tenant", reads=("scope_rules",)),
    "principal_scopes_set": Need("admin", "tenant", changes=("scope_rules",)),
}
UNDECLARED = Need("admin", "tenant", reads=OBJECTS, changes=OBJECTS)


def need_of(operation: str) -> Need:
    return NEEDS.get(operation, UNDECLARED)
