"""The one check every request passes before its operation runs: the principal against the
operation's need (:mod:`.needs`). Refusals are :class:`~capsule.core.errors.Forbidden` (403) naming
what is missing; nothing has been read or changed when one is raised."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.errors import Forbidden, NotFound
from ..governance.visibility import Reach
from .needs import need_of

WRITES_A_MEMORY = ("store", "ingest", "capture")  # a 'project' operation that writes what its body says


@dataclass(frozen=True, slots=True)
class Request:
    """What the check needs of one request, whatever carried it (an HTTP event, a tool call)."""

    operation: str
    label: str  # how refusals name it: "PUT /v1/projects/settings"
    project: str | None = None  # the body's or query's project
    memory_id: str | None = None  # the id the path names
    subject: str | None = None  # what a write would give its memory
    visibility: str | None = None
    memory: Callable[[str], Any] | None = None  # id -> the record (raises NotFound)


def authorize(reach: Reach, request: Request) -> None:
    """Refuse (Forbidden) a request outside ``reach``."""
    need = need_of(request.operation)
    reach.require_access(need.access, request.label)
    if reach.unrestricted or need.reach in ("any", "derived"):
        return  # derived: what it hands back is narrowed by capsule.authz.derived
    if need.reach == "tenant":
        reach.require_whole_tenant(request.label)
        _require_every_visibility(reach, request.label)
    elif need.reach in ("project", "project_all"):
        if need.reach == "project_all":
            reach.require_every_memory(request.label)
        if request.project is None:
            reach.require_whole_tenant(f"{request.label} without a project")
        elif request.operation in WRITES_A_MEMORY:
            reach.require_write(request.project, request.subject, request.visibility)
        else:
            reach.require_project(request.project)
    elif need.reach == "filtered":
        if request.project is not None:
            reach.require_project(request.project)
    elif need.reach == "memory":
        _require_memory(reach, request)


def _require_every_visibility(reach: Reach, operation: str) -> None:
    """A call over every memory of the tenant: a principal that sees less than private memories
    could otherwise change (or be shown) what it cannot read back."""
    if reach.sees != "private":
        raise Forbidden(
            f"{operation} reaches every memory of the tenant, private ones too; {reach.who} sees only "
            f"{reach.sees} memories and wider",
            details=[
                {"field": "scope", "message": "needs a key that sees private memories", "missing": "sees:private"}
            ],
        )


def _require_memory(reach: Reach, request: Request) -> None:
    if request.memory_id is None or request.memory is None:
        return
    try:
        record = request.memory(request.memory_id)
    except NotFound:
        return  # the operation answers 404 as it would for anyone
    reach.require_memory(record.id, record.project, record.subject, record.visibility)
    if request.operation == "update":
        reach.require_write(record.project, request.subject or record.subject, request.visibility or record.visibility)
