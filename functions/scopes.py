"""Scoped credentials: which scope each route needs, what a key or principal is given, and the
check every request passes before its handler runs.

A **scope** (kept on an API key, or granted to IAM principals by the tenant's principal scopes)
is a JSON object, every field optional, the default being the tenant's full access (what every
key had before scopes, so existing keys and principals keep working)::

    {"access": "read" | "write" | "admin",   # read-only, read and write, or everything (default)
     "projects": ["acme/*", "tools"],        # fnmatch patterns (default: every project)
     "subjects": ["alice"],                  # exact subjects (default: any, or none)
     "sees": "private" | "shared" | "public"} # the most private visibility it reads (default private: all)

Each route's needs (the access, how far it reaches — ``memory``, ``project``, ``project_all``,
``filtered``, ``derived``, ``tenant``, ``any`` — and the objects it reads or changes) are declared
in the library, :data:`capsule.authz.NEEDS`, and applied by its one check,
:func:`capsule.authz.authorize`, before the handler runs; what a call derived from memories
returns (patterns, golden paths, export rows) is narrowed by :mod:`capsule.authz.derived`.
Here the request's credentials become the principal (:func:`caller_reach`) and the event its
parts (:func:`check`); :data:`ROUTE_SCOPES` is the (access, reach) view of the declarations.

A route without a declaration needs ``admin`` and the whole tenant (a test walks the route
table so that a new route declares its needs). Refusals are 403 naming what is missing.
"""

from __future__ import annotations

import contextvars
import fnmatch
import json
import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from capsule import authz
from capsule.core import legacy_ids
from capsule.core.errors import CapsuleError, InvalidInput
from capsule.core.fielderrors import from_validation_error
from capsule.core.models import Subject, Visibility
from capsule.governance.visibility import ACCESS_LEVELS, FULL, Reach, pattern_problem

from . import routes

Access = Literal["read", "write", "admin"]
ReachKind = Literal["memory", "project", "project_all", "filtered", "derived", "tenant", "any"]
MAX_PATTERNS = 64

# What each route needs is declared in the library (capsule.authz.NEEDS), beside the one check
# that applies it; this is its (access, reach) view for the OpenAPI document and the tests.
ROUTE_SCOPES: dict[str, tuple[Access, ReachKind]] = {
    name: (need.access, need.reach)
    for name, need in authz.NEEDS.items()  # type: ignore[misc]
}
UNDECLARED: tuple[Access, ReachKind] = ("admin", "tenant")


def route_scope(name: str) -> tuple[Access, ReachKind]:
    return ROUTE_SCOPES.get(name, UNDECLARED)


# ---- the scope document ---------------------------------------------------------------------


# What capsule.governance.visibility.pattern_problem allows, said in the OpenAPI document too:
# no control characters, and each '[...]' class closed, not empty and not nested.
PATTERN_RULE = r"^(?:[^\[\x00-\x1f\x7f]|\[[^\[\]\x00-\x1f\x7f][^\[\]\x00-\x1f\x7f]*\])+$"
ProjectPattern = Annotated[str, StringConstraints(min_length=1, max_length=512, pattern=PATTERN_RULE)]


class KeyScope(BaseModel):
    """What a key or principal may do; every field left out is the tenant's full access."""

    model_config = ConfigDict(extra="forbid", strict=True)

    access: Access = Field("admin", description="read (read-only), write (read and write) or admin (everything).")
    projects: list[ProjectPattern] | None = Field(
        None,
        min_length=1,
        max_length=MAX_PATTERNS,
        description=("fnmatch patterns (*, ?, [...]) of the projects it reaches; default every project."),
    )
    subjects: list[Subject] | None = Field(
        None,
        min_length=1,
        max_length=MAX_PATTERNS,
        description=("The subjects it reaches (exact); default any memory, with or without a subject."),
    )
    sees: Visibility = Field(
        "private",
        description=(
            "The most private visibility it reads: private (all), shared (shared and public), public (public only)."
        ),
    )

    @field_validator("projects", mode="before")  # before the schema's pattern: its reason, not the regex
    @classmethod
    def _patterns(cls, value: Any) -> Any:
        for index, pattern in enumerate(value if isinstance(value, list) else []):
            if not isinstance(pattern, str):
                continue  # the schema says it must be a string
            problem = pattern_problem(pattern)
            if problem is None and len(pattern) > 512:
                problem = "is longer than 512 characters"
            if problem:
                raise ValueError(f"projects[{index}]: the pattern {pattern!r} {problem}")
        return value

    def plain(self) -> dict[str, Any]:
        """Only what differs from full access (what a key file keeps)."""
        return self.model_dump(exclude_defaults=True)


def parse_scope(data: Any, field: str = "scope") -> KeyScope:
    """A scope document, strictly: an unknown field, a bad pattern or value is InvalidInput naming it."""
    if isinstance(data, KeyScope):
        return data
    if not isinstance(data, Mapping):
        raise InvalidInput(f"{field}: must be a JSON object", field=field)
    try:
        return KeyScope.model_validate(dict(data))
    except ValidationError as exc:
        error = from_validation_error(exc, KeyScope)
        details = [{**d, "field": f"{field}.{d.get('field')}"} for d in error.details or []]
        raise InvalidInput(
            f"{field}.{error.message}", field=details[0]["field"] if details else field, details=details
        ) from exc


def reach_of(scope: KeyScope | Mapping[str, Any] | None, who: str) -> Reach:
    if scope is None:
        return FULL if who == FULL.who else Reach(who=who)
    scope = parse_scope(scope)
    return Reach(
        access=scope.access,
        projects=None if scope.projects is None else tuple(scope.projects),
        subjects=None if scope.subjects is None else tuple(scope.subjects),
        sees=scope.sees,
        who=who,
    )


def describe(scope: KeyScope | Mapping[str, Any] | None) -> str:
    """One line for ``capsule keys list``."""
    scope = parse_scope(scope or {})
    parts = [scope.access]
    if scope.projects:
        parts.append("projects " + ",".join(scope.projects))
    if scope.subjects:
        parts.append("subjects " + ",".join(scope.subjects))
    if scope.sees != "private":
        parts.append(f"sees {scope.sees}+")
    return "; ".join(parts) if len(parts) > 1 or scope.access != "admin" else "full"


# ---- principal scopes (SigV4) ------------------------------------------------------------------


class PrincipalRule(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    principal: str = Field(
        min_length=1,
        max_length=2048,
        pattern=PATTERN_RULE,
        description=(
            "An fnmatch pattern of the IAM principal ARN (the caller's userArn), e.g. "
            "arn:aws:sts::123456789012:assumed-role/ci-*/*"
        ),
    )
    scope: KeyScope

    @field_validator("principal", mode="before")  # before the schema's pattern: its reason, not the regex
    @classmethod
    def _pattern(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value  # the schema says it must be a string
        problem = pattern_problem(value)
        if problem:
            raise ValueError(f"the pattern {value!r} {problem}")
        return value


def principal_reach(rules: list[Mapping[str, Any]], arn: str) -> Reach:
    """The first rule whose pattern matches the principal's ARN; none: full access."""
    for rule in rules:
        if fnmatch.fnmatchcase(arn, str(rule.get("principal", ""))):
            return reach_of(rule.get("scope") or {}, f"principal {arn}")
    return FULL


# ---- the request's reach --------------------------------------------------------------------

_reach: contextvars.ContextVar[Reach] = contextvars.ContextVar("capsule_reach", default=FULL)
_principal: contextvars.ContextVar[str | None] = contextvars.ContextVar("capsule_principal", default=None)


def current_principal() -> str | None:
    """The IAM principal ARN of the request being handled (None: a token or API key)."""
    return _principal.get()


def current() -> Reach:
    """The reach of the request being handled (full access outside a request)."""
    return _reach.get()


def caller_reach(event: dict[str, Any], rules: Callable[[], list[Mapping[str, Any]]]) -> Reach:
    """The reach of the verified identity in the event: an API key's scope (the authorizer
    context carries it as JSON), or the tenant's principal scopes for a SigV4 principal."""
    authorizer = ((event.get("requestContext") or {}).get("authorizer")) or {}
    iam = authorizer.get("iam")
    if isinstance(iam, Mapping) and iam.get("userArn"):
        _principal.set(str(iam["userArn"]))
        return principal_reach(rules(), str(iam["userArn"]))
    _principal.set(None)
    context = authorizer.get("lambda") or {}
    scope = context.get("scope")
    if not scope:
        return FULL
    who = f"API key {context.get('key')!r}" if context.get("key") else "the key"
    try:
        return reach_of(json.loads(scope) if isinstance(scope, str) else scope, who)
    except (ValueError, CapsuleError):
        # A key whose stored scope no longer parses reaches nothing rather than everything.
        return Reach(access="read", projects=(), subjects=(), sees="public", who=who)


def _project_of(event: dict[str, Any], body: Mapping[str, Any] | None) -> str | None:
    value = (body or {}).get("project")
    if value is None:
        value = (event.get("queryStringParameters") or {}).get("project")
    return value if isinstance(value, str) else None


def _string(body: Mapping[str, Any] | None, name: str) -> str | None:
    value = (body or {}).get(name)
    return value if isinstance(value, str) else None


def check(
    route: routes.Route,
    event: dict[str, Any],
    body: Mapping[str, Any] | None,
    reach: Reach,
    memory: Callable[[str], Any],
) -> None:
    """Refuse (Forbidden) a request outside ``reach``: the event's parts, to the library's one check
    (capsule.authz.authorize); ``memory(id)`` reads the record an id names."""
    memory_id = (event.get("pathParameters") or {}).get("id")
    authz.authorize(
        reach,
        authz.Request(
            operation=route.name,
            label=f"{route.method} {route.path}",
            project=_project_of(event, body),
            memory_id=memory_id if isinstance(memory_id, str) else None,
            subject=_string(body, "subject"),
            visibility=_string(body, "visibility"),
            memory=memory,
        ),
    )


def memory_reader(tenant: str, service: Callable[[], Any]) -> Callable[[str], Any]:
    """id -> the tenant's memory record (forgotten ones too; a legacy id as well), NotFound otherwise."""
    return lambda memory_id: service().store.get(
        tenant, legacy_ids.memory_id(service().store, tenant, memory_id), include_forgotten=True
    )


def readable(tenant: str, service: Callable[[], Any]) -> authz.Readable:
    """What the request's principal can read, for narrowing what a call derived from memories returns."""
    return authz.Readable(current(), memory_reader(tenant, service))


def openapi_scope(name: str) -> dict[str, Any]:
    access, kind = route_scope(name)
    return {"access": access, "reach": kind, "levels": list(ACCESS_LEVELS[ACCESS_LEVELS.index(access) :])}


RULES_TTL_S = 10.0  # at most this long a container keeps a tenant's principal scopes (the store's cache_s)
_rules_cache: dict[tuple[int, str], tuple[float, list[Mapping[str, Any]]]] = {}


def principal_rules(tenant: str, store: Any, *, now: Callable[[], float] = time.monotonic) -> list[Mapping[str, Any]]:
    """The tenant's principal scopes, read at most every RULES_TTL_S seconds per container."""
    from capsule.store.scopes import scope_settings

    if store is None:  # a service without a store of its own (a test double)
        return []
    settings = scope_settings(store)
    keep = min(RULES_TTL_S, getattr(settings, "cache_s", 0.0))
    if not keep:
        return settings.principal_rules(tenant)
    key = (id(store), tenant)
    cached = _rules_cache.get(key)
    if cached is not None and now() - cached[0] < keep:
        return cached[1]
    rules = settings.principal_rules(tenant)
    _rules_cache[key] = (now(), rules)
    return rules


def forget_rules(tenant: str) -> None:
    """A change made here takes effect at once in this container (others within RULES_TTL_S)."""
    for key in [k for k in _rules_cache if k[1] == tenant]:
        _rules_cache.pop(key, None)


def admit(
    route: routes.Route, event: dict[str, Any], body: Mapping[str, Any] | None, tenant: str, service: Callable[[], Any]
) -> Reach:
    """The caller's reach, once its request is checked against it (Forbidden otherwise)."""
    reach = caller_reach(event, lambda: principal_rules(tenant, getattr(service(), "store", None)))
    if reach is not FULL:
        check(route, event, body, reach, memory_reader(tenant, service))
    return reach


def within(reach: Reach):
    """Set the request's reach (app.make_handler); returns the token to reset."""
    return _reach.set(reach)


def reset(token: contextvars.Token) -> None:
    _reach.reset(token)


__all__ = [
    "KeyScope",
    "PrincipalRule",
    "ROUTE_SCOPES",
    "caller_reach",
    "check",
    "current",
    "describe",
    "openapi_scope",
    "parse_scope",
    "principal_reach",
    "reach_of",
    "reset",
    "route_scope",
    "within",
]


# ---- the routes' shapes ---------------------------------------------------------------------

MAX_RULES = 100


class PrincipalScopesRequest(BaseModel):
    """The tenant's principal scopes, replacing the ones it had (first match wins; none matching:
    full access). An empty list removes them."""

    model_config = ConfigDict(extra="forbid", strict=True)

    rules: list[PrincipalRule] = Field(max_length=MAX_RULES)


class PrincipalScopesResult(BaseModel):
    rules: list[PrincipalRule]
    explanation: str


class CallerScope(BaseModel):
    tenant: str
    who: str
    scope: KeyScope
    explanation: str


def lockout(rules: list[PrincipalRule], principal: str | None) -> CapsuleError | None:
    """Rules that would take admin from the principal setting them are refused (409): nobody
    else could set them back."""
    if principal is None:
        return None
    reach = principal_reach([r.model_dump() for r in rules], principal)
    if reach.has_access("admin") and reach.projects is None and reach.subjects is None:
        return None
    from capsule.core.errors import Conflict

    return Conflict(
        f"rules: they would limit {principal}, who is setting them, to less than admin of the whole "
        "tenant; add a rule for it first (first match wins)",
        details=[{"field": "rules", "message": "would lock the caller out", "principal": principal}],
    )
