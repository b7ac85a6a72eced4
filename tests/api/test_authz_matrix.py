"""The authorization matrix, generated from the route table: every route x every principal kind
(full, read-only, project-scoped, shared, public, subject, revoked, other tenant) x the objects
the route reads or changes (memories in and out of a key's reach, project settings, patterns,
golden paths, capture candidates, export and sync rows, history, the audit log).

The expectation is this test's own, not the implementation's: each route says here which
memories its call reaches (one memory, a memory it would write, every memory of a project, every
memory of the tenant, or only what it returns), and a key may make the call only if it can read
every memory reached. Every case also checks that

- a denied call changes nothing (every table of the store is compared before and after),
- no answer carries the id or text of a memory the key cannot read (derived objects included:
  a pattern's examples and description, a candidate, an export or sync row),
- an other tenant's key changes nothing and sees nothing of this tenant, and a revoked key
  never reaches a handler.

The fixture is built once (through the real handlers, with the tenant's full key) and copied
for each case, so every case starts from the same store.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from capsule.config import Settings
from capsule.runtime.service import build_service
from functions import app, authorizer, routes, scopes

from .events import event

TENANT, OTHER = "acme", "globex"
VIS_RANK = {"private": 0, "shared": 1, "public": 2}


# ---- the principals ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Principal:
    kind: str
    scope: dict | None = None
    tenant: str = TENANT

    @property
    def access(self) -> str:
        return (self.scope or {}).get("access", "admin")

    def reads(self, project: str, subject: str | None, visibility: str) -> bool:
        """What this test expects the key to read (independent of the implementation)."""
        if self.kind in ("revoked", "other_tenant"):
            return False
        scope = self.scope or {}
        if "projects" in scope and not any(_match(project, p) for p in scope["projects"]):
            return False
        if "subjects" in scope and subject not in scope["subjects"]:
            return False
        return VIS_RANK[visibility] >= VIS_RANK[scope.get("sees", "private")]

    def authorizer(self) -> dict | None:
        if self.kind == "revoked":
            return None
        context = {"tenant": self.tenant, "key": self.kind}
        if self.scope is not None:
            context["scope"] = json.dumps(self.scope)
        return {"lambda": context}


def _match(project: str, pattern: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(project, pattern)


PRINCIPALS = [
    Principal("full"),
    Principal("read_only", {"access": "read"}),
    Principal("project", {"projects": ["pub*"]}),
    Principal("shared", {"sees": "shared"}),
    Principal("public", {"sees": "public"}),
    Principal("subject", {"subjects": ["bob"]}),
    Principal("revoked", {}),
    Principal("other_tenant", None, OTHER),
]

# ---- the objects ------------------------------------------------------------------------------

# (name, project, subject, visibility, content): the content carries a token the leak check looks for.
MEMORIES = [
    ("S1", "secret", "alice", "private", "connect ECONNREFUSED 10.0.0.9:6379 while loading TOKSECRETONE"),
    ("S2", "secret", "alice", "private", "connect ECONNREFUSED 10.0.0.9:6379 while saving TOKSECRETTWO"),
    ("PB", "pub1", "bob", "public", "bob prefers tabs TOKPUBBOB"),
    ("PA", "pub1", "alice", "private", "alice salary notes TOKPUBALICE"),
    ("PS", "pub1", None, "shared", "team runbook for deploys TOKPUBSHARED"),
]
# A capture candidate carries no subject and no visibility: only a key that reads a private,
# unassigned memory of its project may see it.
CANDIDATE = (
    "C",
    "pub1",
    None,
    "private",
    "We decided that Alice keeps the TOKCANDIDATE release keys because she handles them well.",
)
FIXPACK = {
    "title": "Point REDIS_URL at the private host",
    "category": "network",
    "signatures": [{"text": "connect ECONNREFUSED 127.0.0.1:6379", "regexes": [r"ECONNREFUSED\s+\S*:6379"]}],
    "steps": [{"step_order": 1, "kind": "cmd", "payload": {"command": "railway variables set REDIS_URL=..."}}],
    "checks": [{"check_order": 1, "cmd": "redis-cli ping", "expect_substring": "PONG"}],
}
T = "2026-03-02T10:00:00+00:00"


def _full() -> dict:
    return {"lambda": {"tenant": TENANT, "key": "owner"}}


class Called:
    """A handler's answer; ``json`` is None for a body that is not one JSON document (an export)."""

    def __init__(self, response: dict[str, Any]) -> None:
        self.raw, self.status = response, response["statusCode"]
        try:
            self.json = json.loads(response.get("body") or "null")
        except ValueError:
            self.json = None

    def __repr__(self) -> str:
        return f"<{self.status} {self.raw.get('body', '')[:300]}>"


def _invoke(e: dict[str, Any]) -> Called:
    route = next(r for r in routes.ROUTES if f"{r.method} {r.path}" == e["routeKey"])
    module_name, _, attribute = route.handler.partition(":")
    handler = getattr(importlib.import_module(module_name), attribute)
    context = app.LocalContext(function_name=route.name, aws_request_id=e["requestContext"]["requestId"])
    return Called(handler(e, context))


@dataclass
class World:
    ids: dict[str, str]  # fixture name -> id (memories, candidate, solution)
    pattern: dict[str, str]  # the mined pattern's tag and category
    sync_row: dict[str, Any]  # a row of /v1/sync/changes (project secret), changed: a newer content
    export_text: str  # an export of project secret (a body for /v1/import)


def _build(data_dir: Path) -> World:
    svc = build_service(Settings(data_dir=data_dir, embedder="hashing"))
    app.set_service(svc)
    try:
        ids: dict[str, str] = {}
        for name, project, subject, visibility, content in MEMORIES:
            body = {
                "project": project,
                "content": content,
                "visibility": visibility,
                **({"subject": subject} if subject else {}),
            }
            if name.startswith("S"):
                body["meta"] = {"type": "error", "outcome_status": "failure"}
            r = _invoke(event("store", body=body, authorizer=_full()))
            assert r.status == 201, r
            ids[name] = r.json["memory"]["id"]
        events = [{"role": "assistant", "text": CANDIDATE[4], "time": T, "session": "s1"}]
        r = _invoke(event("capture", body={"project": "pub1", "events": events}, authorizer=_full()))
        assert r.status == 200 and r.json["candidates"], r
        ids["C"] = r.json["candidates"][0]["id"]
        mined = _invoke(event("detect_patterns", body={"min_occurrences": 2}, authorizer=_full()))
        assert mined.status == 200 and mined.json["patterns"], mined
        found = mined.json["patterns"][0]
        assert found["projects"] == ["secret"], found
        pattern = {"tag": found["tag"], "category": found["category"]}
        r = _invoke(event("solution_create", body=FIXPACK, authorizer=_full()))
        assert r.status == 201, r
        ids["SOL"] = r.json["solution"]["id"]
        for _ in range(2):  # a golden path: the solution worked for the secret pattern
            r = _invoke(
                event("pattern_link", body={**pattern, "solution_id": ids["SOL"], "success": True}, authorizer=_full())
            )
            assert r.status == 200, r
        r = _invoke(
            event(
                "update",
                path_params={"id": ids["S1"]},
                body={"content": MEMORIES[0][4] + " (edited)"},
                authorizer=_full(),
            )
        )
        assert r.status == 200, r  # a version in S1's history
        for name in ("PA", "PB"):  # audit records in pub1: of a private memory of alice's, of bob's public one
            for route in ("pin", "unpin"):
                r = _invoke(event(route, path_params={"id": ids[name]}, authorizer=_full()))
                assert r.status == 200, r
        changes = _invoke(event("sync_changes", query={"project": "secret"}, authorizer=_full()))
        assert changes.status == 200, changes
        item = next(i for i in changes.json["items"] if i["memory"]["id"] == ids["S2"])
        row = json.loads(json.dumps(item))
        later = datetime.fromisoformat(row["memory"]["updated_at"]) + timedelta(days=1)
        row["memory"]["content"] = "rewritten by a sync row TOKREWRITTEN"
        row["memory"]["updated_at"] = later.isoformat()
        exported = _invoke(event("export", query={"project": "secret"}, authorizer=_full()))
        assert exported.status == 200
        return World(ids, pattern, row, exported.raw["body"])
    finally:
        app.set_service(None)
        svc.store.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> tuple[Path, World]:
    template = tmp_path_factory.mktemp("authz-template")
    return template, _build(template)


# ---- what each route reaches -----------------------------------------------------------------
# kind: "none" (no memory), "memory" (one, named), "new" (one it would write), "project" (every
# memory and candidate of a project), "tenant" (every memory of the tenant), "filtered" (what
# it returns is narrowed to the key's reach: only the leak check applies).


@dataclass(frozen=True)
class Case:
    route: str
    target: str  # a label for the test id
    reaches: tuple  # ("memory", name) | ("new", project, subject, vis) | ("project", p) | ...
    request: Callable[[World], dict]  # event keyword arguments: body, query, path_params, raw_body
    full_statuses: tuple[int, ...] = (200, 201)


def _mem(name: str) -> Callable[[World], dict]:
    return lambda w: {"path_params": {"id": w.ids[name]}}


def _with(base: Callable[[World], dict], **extra: Any) -> Callable[[World], dict]:
    return lambda w: {**base(w), **extra}


def _memory_cases(
    route: str, body: dict | None = None, query: dict | None = None, full: tuple[int, ...] = (200, 201)
) -> list[Case]:
    def request(name: str) -> Callable[[World], dict]:
        extra: dict[str, Any] = {}
        if body is not None:
            extra["body"] = body
        if query is not None:
            extra["query"] = query
        return _with(_mem(name), **extra)

    return [
        Case(route, "out", ("memory", "S1"), request("S1"), full),
        Case(route, "in", ("memory", "PB"), request("PB"), full),
    ]


def _project_cases(route: str, make: Callable[[str], dict], full: tuple[int, ...] = (200, 201)) -> list[Case]:
    return [
        Case(route, project, ("project", project), lambda w, p=project: make(p), full) for project in ("secret", "pub1")
    ]


def _filtered(route: str, make: Callable[[World], dict], target: str = "all") -> Case:
    return Case(route, target, ("filtered",), make)


CASES: list[Case] = [
    Case("health", "-", ("none",), lambda w: {}),
    Case("store", "out", ("new", "secret", None, "private"), lambda w: {"body": {"project": "secret", "content": "n"}}),
    Case(
        "store",
        "in",
        ("new", "pub1", "bob", "public"),
        lambda w: {"body": {"project": "pub1", "content": "n", "subject": "bob", "visibility": "public"}},
    ),
    _filtered("list", lambda w: {"query": {"project": "secret"}}, "secret"),
    _filtered("list", lambda w: {"query": {"project": "pub1"}}, "pub1"),
    Case(
        "ingest",
        "out",
        ("new", "secret", None, "private"),
        lambda w: {"body": {"project": "secret", "text": "some notes to ingest"}},
    ),
    _filtered(
        "search", lambda w: {"body": {"query": "ECONNREFUSED salary tabs runbook", "global": True, "mode": "bm25"}}
    ),
    *_memory_cases("get"),
    *_memory_cases("forget"),
    *_memory_cases("pin"),
    *_memory_cases("unpin"),
    *_memory_cases("restore", full=(409,)),  # not forgotten: nothing to restore
    *_memory_cases("feedback", body={"helpful": False}),
    *_memory_cases("update", body={"content": "rewritten TOKREWRITTEN"}),
    *_memory_cases("history"),
    *_memory_cases("revert", body={"version": 1}, full=(200, 422)),  # PB has one version only
    _filtered("projects", lambda w: {}),
    # the audit log: every record names a memory; a limited key sees those of memories it can read
    _filtered("audit", lambda w: {}, "all"),
    _filtered("audit", lambda w: {"query": {"project": "secret"}}, "secret"),
    _filtered("audit", lambda w: {"query": {"project": "pub1"}}, "pub1"),
    _filtered("audit", lambda w: {"query": {"memory_id": w.ids["PA"]}}, "PA"),
    Case("usage", "-", ("tenant",), lambda w: {}),
    Case(
        "capture",
        "secret",
        ("new", "secret", None, "private"),
        lambda w: {
            "body": {
                "project": "secret",
                "events": [
                    {
                        "role": "assistant",
                        "text": "We decided to keep the staging database because the migration failed.",
                        "time": T,
                        "session": "s2",
                    }
                ],
            }
        },
    ),
    *_project_cases("capture_settings", lambda p: {"body": {"project": p, "threshold": 0.9}}),
    *_project_cases("candidates", lambda p: {"query": {"project": p}}),
    Case("candidate_approve", "C", ("tenant",), lambda w: {"path_params": {"id": w.ids["C"]}, "body": {}}),
    Case("candidate_reject", "C", ("tenant",), lambda w: {"path_params": {"id": w.ids["C"]}, "body": {}}),
    *_project_cases("project_settings", lambda p: {"body": {"project": p, "retention_limit": 1}}),
    *_project_cases("project_settings", lambda p: {"body": {"project": p, "secrets_policy": "flag"}}),
    Case("rotate_data_key", "-", ("tenant",), lambda w: {"body": {}}),
    Case("openapi", "-", ("none",), lambda w: {}),
    Case("solution_create", "-", ("none",), lambda w: {"body": FIXPACK}),
    Case("solution_list", "-", ("none",), lambda w: {}),
    Case("solution_import", "-", ("none",), lambda w: {"body": {**FIXPACK, "title": "Imported"}}),
    Case("solution_search", "-", ("none",), lambda w: {"body": {"error": "connect ECONNREFUSED 127.0.0.1:6379"}}),
    Case("solution_get", "-", ("none",), lambda w: {"path_params": {"id": w.ids["SOL"]}}),
    Case("solution_update", "-", ("none",), lambda w: {"path_params": {"id": w.ids["SOL"]}, "body": FIXPACK}),
    Case("solution_delete", "-", ("none",), lambda w: {"path_params": {"id": w.ids["SOL"]}}),
    Case(
        "solution_apply",
        "pattern",
        ("filtered",),
        lambda w: {"path_params": {"id": w.ids["SOL"]}, "body": {"success": True, "pattern": w.pattern}},
    ),
    _filtered("pattern_detect", lambda w: {"body": {"error": "connect ECONNREFUSED 10.0.0.9:6379 while loading"}}),
    _filtered("pattern_solutions", lambda w: {"body": dict(w.pattern)}),
    _filtered("pattern_link", lambda w: {"body": {**w.pattern, "solution_id": w.ids["SOL"], "success": True}}),
    _filtered("golden_paths", lambda w: {"query": {"min_applications": 1}}),
    Case("detect_patterns", "-", ("tenant",), lambda w: {"body": {"min_occurrences": 2}}),
    *_project_cases("export", lambda p: {"query": {"project": p}}),
    Case("import_data", "-", ("tenant",), lambda w: {"raw_body": w.export_text}),
    *_project_cases("sync_changes", lambda p: {"query": {"project": p}}),
    Case("sync_apply", "row", ("tenant",), lambda w: {"body": {"project": "secret", "items": [w.sync_row]}}),
    Case("whoami", "-", ("none",), lambda w: {}),
    # a job is read by its submitter only: every other caller's answer is a missing job's 404
    # (tests/api/test_async_jobs.py covers jobs that exist)
    Case("job_get", "-", ("none",), lambda w: {"path_params": {"id": "job_missing"}}, (404,)),
    Case("principal_scopes", "-", ("tenant",), lambda w: {}),
    Case("principal_scopes_set", "-", ("tenant",), lambda w: {"body": {"rules": []}}),
]

MEMORY_AT = {name: (project, subject, vis) for name, project, subject, vis, _ in [*MEMORIES, CANDIDATE]}


def expected_allowed(principal: Principal, case: Case) -> bool | None:
    """This test's own policy: the route's access level, and every memory the call reaches readable
    (None: either, as long as what it returns is within the key's reach)."""
    needed = scopes.route_scope(case.route)[0] if routes.by_name(case.route).auth else "read"
    if ("read", "write", "admin").index(principal.access) < ("read", "write", "admin").index(needed):
        return False
    kind = case.reaches[0]
    if kind == "filtered":
        return None if principal.kind != "full" else True
    if kind == "none":
        return True
    if kind == "memory":
        return principal.reads(*MEMORY_AT[case.reaches[1]])
    if kind == "new":
        return principal.reads(*case.reaches[1:])
    if kind == "project":
        return all(principal.reads(*where) for where in MEMORY_AT.values() if where[0] == case.reaches[1])
    assert kind == "tenant"
    return all(principal.reads(*where) for where in MEMORY_AT.values())


def unreadable_tokens(principal: Principal, world: World) -> list[str]:
    """The ids and text of what the key cannot read: none may appear in an answer it gets."""
    tokens = []
    for name, project, subject, vis, content in [*MEMORIES, CANDIDATE]:
        if not principal.reads(project, subject, vis):
            tokens += [world.ids[name], content.split()[-1] if name != "C" else "TOKCANDIDATE"]
    return tokens


# ---- the store, before and after -------------------------------------------------------------

VOLATILE = {"embedding_cache", "job_leases", "job_state", "sqlite_sequence", "store_info"}


def snapshot(data_dir: Path) -> dict[str, list]:
    tables: dict[str, list] = {}
    for path in sorted(data_dir.rglob("*.db")):
        conn = sqlite3.connect(path)
        try:
            names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for name in names:
                if name in VOLATILE or name.startswith("sqlite_"):
                    continue
                rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()
                tables[f"{path.name}:{name}"] = sorted(map(repr, rows))
        finally:
            conn.close()
    return tables


# ---- the matrix --------------------------------------------------------------------------------


def test_every_route_is_in_the_matrix_and_declares_its_needs():
    """A route added to the table without a declaration in capsule.authz, or without a case
    here, fails this test."""
    from capsule import authz

    names = {r.name for r in routes.ROUTES}
    assert names - {c.route for c in CASES} == set(), "a route the authorization matrix does not cover"
    assert names - set(authz.NEEDS) == set(), "a route without its needs declared in capsule.authz.NEEDS"
    for name in names:
        need = authz.need_of(name)
        assert need.reads or need.changes, f"{name}: say which objects it reads or changes"


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.kind)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.route}-{c.target}-{CASES.index(c)}")
def test_authorization_matrix(world, tmp_path, case: Case, principal: Principal):
    template, w = world
    data_dir = tmp_path / "data"
    shutil.copytree(template, data_dir)
    svc = build_service(Settings(data_dir=data_dir, embedder="hashing"))
    app.set_service(svc)
    try:
        before = snapshot(data_dir)
        route = routes.by_name(case.route)
        kwargs = case.request(w)
        auth = principal.authorizer() if route.auth else None
        if principal.kind == "revoked" and route.auth:
            # The authorizer no longer knows the key: API Gateway answers 401 without calling the handler.
            presented = {"headers": {"authorization": "Bearer cap_revoked_key"}}
            assert authorizer.decide(presented, {"api_keys": {}}) == {"isAuthorized": False}
        e = event(case.route, tenant=None, authorizer=auth, **kwargs)
        answer = _invoke(e)
        after = snapshot(data_dir)
    finally:
        app.set_service(None)
        svc.store.close()

    allowed = expected_allowed(principal, case)
    where = f"{principal.kind} {route.method} {route.path} ({case.target}): {answer!r}"
    if principal.kind == "revoked" and route.auth:
        assert answer.status == 401, where
        assert after == before, where
        return
    if principal.kind == "other_tenant":
        assert answer.status not in (401, 500), where
        assert after == before or _only_other_tenant(before, after), where
    elif allowed is None:
        assert answer.status not in (401, 500), where
        if answer.status in (403, 404):
            assert after == before, where
    elif allowed:
        assert answer.status not in (401, 403), "allowed, but refused: " + where
        if principal.kind == "full":
            assert answer.status in case.full_statuses, where
    else:
        assert answer.status in (403, 404), "should be refused: " + where
        changed = sorted(k for k in before if before[k] != after.get(k))
        assert after == before, f"a refused call changed {changed}: {where}"
    if 200 <= answer.status < 300:
        text = answer.raw.get("body") or ""
        leaked = [t for t in unreadable_tokens(principal, w) if t in text]
        assert not leaked, f"the answer carries what the key cannot read {leaked}: {where}"


def _only_other_tenant(before: dict, after: dict) -> bool:
    """An other tenant's call may change its own rows only: every row added or removed names it."""
    for key in set(before) | set(after):
        old, new = set(before.get(key, [])), set(after.get(key, []))
        for row in old ^ new:
            if repr(OTHER) not in row:
                return False
    return True


# ---- the four doors, one by one (the matrix covers them too) --------------------------------


@pytest.fixture
def copied(world, tmp_path):
    template, w = world
    data_dir = tmp_path / "data"
    shutil.copytree(template, data_dir)
    svc = build_service(Settings(data_dir=data_dir, embedder="hashing"))
    app.set_service(svc)
    yield w
    app.set_service(None)
    svc.store.close()


def _as(kind: str) -> dict | None:
    return next(p for p in PRINCIPALS if p.kind == kind).authorizer()


def test_a_subject_or_shared_key_cannot_set_a_retention_limit_that_evicts_others(copied):
    for kind in ("subject", "shared"):
        r = _invoke(
            event("project_settings", tenant=None, authorizer=_as(kind), body={"project": "pub1", "retention_limit": 1})
        )
        assert r.status == 403 and r.json["error"]["details"][0]["missing"] in ("subjects", "sees:private"), r
    # a key limited to projects reads every memory of its projects: it may set theirs
    r = _invoke(
        event(
            "project_settings", tenant=None, authorizer=_as("project"), body={"project": "pub1", "retention_limit": 50}
        )
    )
    assert r.status == 200, r


def test_a_shared_key_cannot_rewrite_a_private_memory_through_sync_apply(copied):
    r = _invoke(
        event(
            "sync_apply", tenant=None, authorizer=_as("shared"), body={"project": "secret", "items": [copied.sync_row]}
        )
    )
    assert r.status == 403 and r.json["error"]["details"][0]["missing"] == "sees:private", r
    got = _invoke(event("get", path_params={"id": copied.ids["S2"]}, authorizer=_full()))
    assert "TOKREWRITTEN" not in got.json["memory"]["content"]


def test_sync_apply_answers_an_id_held_by_another_tenant_as_one_nobody_holds(copied):
    """No existence oracle across tenants: the other tenant's row with this tenant's id S2 is
    answered as its row with a fresh id is (it once answered 409 "held by another tenant")."""
    import uuid

    held = json.loads(json.dumps(copied.sync_row))
    fresh = json.loads(json.dumps(copied.sync_row))
    fresh["memory"]["id"] = uuid.uuid4().hex
    for row in (held, fresh):
        for vote in row.get("votes") or []:
            vote["memory_id"] = row["memory"]["id"]
    answers = []
    for row in (held, fresh, held):  # the third: the same row again is merged, not refused
        r = _invoke(
            event("sync_apply", tenant=None, authorizer=_as("other_tenant"), body={"project": "secret", "items": [row]})
        )
        answers.append(r)
    assert answers[0].status == answers[1].status == 200, answers

    def same(r: Called) -> dict:
        return {k: v for k, v in r.json.items() if k not in ("version", "quiet")}

    assert same(answers[0]) == same(answers[1]), answers
    assert answers[2].status == 200 and answers[2].json["applied"] == 0, answers[2]
    got = _invoke(event("get", path_params={"id": copied.ids["S2"]}, authorizer=_full()))
    assert got.status == 200 and "TOKREWRITTEN" not in got.json["memory"]["content"], got
    mine = _invoke(event("sync_changes", tenant=None, query={"project": "secret"}, authorizer=_as("other_tenant")))
    assert mine.status == 200 and len(mine.json["items"]) == 2, mine
    assert {i["memory"]["content"] for i in mine.json["items"]} == {held["memory"]["content"]}
    # Ids are unique per tenant: both rows are kept under the ids they arrived with, and read back by them.
    assert {i["memory"]["id"] for i in mine.json["items"]} == {copied.ids["S2"], fresh["memory"]["id"]}, mine
    for memory_id in (copied.ids["S2"], fresh["memory"]["id"]):
        r = _invoke(event("get", tenant=None, path_params={"id": memory_id}, authorizer=_as("other_tenant")))
        assert r.status == 200 and r.json["memory"]["id"] == memory_id, r


@contextmanager
def _serving_a_copy(template: Path, data_dir: Path) -> Iterator[None]:
    shutil.copytree(template, data_dir)
    svc = build_service(Settings(data_dir=data_dir, embedder="hashing"))
    app.set_service(svc)
    try:
        yield
    finally:
        app.set_service(None)
        svc.store.close()


def test_an_import_answers_ids_held_by_another_tenant_as_ids_nobody_holds(world, tmp_path):
    """No existence oracle across tenants: the other tenant imports this tenant's export of
    project secret, once as it is (every id held here: memories, the solution, its
    applications) and once, on another copy of the same store, with every such id swapped for a
    fresh one. Every answer (the import's counts and notes, a read of each memory and solution,
    the changes feed, the export) is the same but for the ids themselves."""
    import uuid

    template, w = world
    rows = [json.loads(line) for line in w.export_text.splitlines()]
    held = [r["id"] for r in rows if r["kind"] == "memory"]
    solutions = [r["id"] for r in rows if r["kind"] == "solution"]
    applications = [r["id"] for r in rows if r["kind"] == "application"]
    assert held and solutions == [w.ids["SOL"]], w.export_text[:300]
    fresh = {old: uuid.uuid4().hex for old in (*held, *solutions, *applications)}
    renamed = w.export_text
    for old, new in fresh.items():
        renamed = renamed.replace(old, new)
    seen: dict[str, str] = {}
    for name, text, ids, sids in (
        ("held", w.export_text, held, solutions),
        ("fresh", renamed, [fresh[i] for i in held], [fresh[i] for i in solutions]),
    ):
        with _serving_a_copy(template, tmp_path / name):
            other = _as("other_tenant")
            answers = [_invoke(event("import_data", tenant=None, raw_body=text, authorizer=other))]
            answers += [_invoke(event("get", tenant=None, path_params={"id": i}, authorizer=other)) for i in ids]
            answers.append(_invoke(event("sync_changes", tenant=None, query={"project": "secret"}, authorizer=other)))
            got = [_invoke(event("solution_get", tenant=None, path_params={"id": i}, authorizer=other)) for i in sids]
            exported = _invoke(event("export", tenant=None, authorizer=other))
            assert all(a.status == 200 for a in (*answers, *got, exported)), (answers, got, exported)
            assert [a.json["memory"]["id"] for a in answers[1:-1]] == ids
            assert {i["memory"]["id"] for i in answers[-1].json["items"]} == set(ids)
            assert [g.json["solution"]["id"] for g in got] == sids  # kept as sent
            said = answers[0].raw["body"]
            assert "held by another tenant" not in said and answers[0].json["imported"].get("solution") == 1, said
            theirs = [json.loads(line) for line in exported.raw["body"].splitlines()]
            assert [r["id"] for r in theirs if r["kind"] == "solution"] == sids
            assert len([r for r in theirs if r["kind"] == "application"]) == len(applications)
            # this tenant's own memories and solution are untouched
            mine = [_invoke(event("get", path_params={"id": i}, authorizer=_full())) for i in held]
            assert all(m.status == 200 and "TOKREWRITTEN" not in m.raw["body"] for m in mine), mine
            own = _invoke(event("solution_get", path_params={"id": w.ids["SOL"]}, authorizer=_full()))
            assert own.status == 200 and own.json["solution"]["title"] == FIXPACK["title"], own
        body = json.dumps([a.json for a in (*answers, *got)], sort_keys=True)
        for old, new in fresh.items():
            body = body.replace(new, old)
        seen[name] = body
    assert seen["held"] == seen["fresh"]


def test_patterns_show_a_scoped_key_only_what_it_can_read(copied):
    error = {"error": "connect ECONNREFUSED 10.0.0.9:6379 while loading"}
    everyone = _invoke(event("pattern_detect", body=error, authorizer=_full()))
    assert [m["pattern"]["projects"] for m in everyone.json["results"]] == [["secret"]]  # full keys: as before
    for kind in ("project", "shared", "subject", "public"):
        r = _invoke(event("pattern_detect", tenant=None, body=error, authorizer=_as(kind)))
        assert r.status == 200 and r.json["results"] == [], (kind, r)
        one = _invoke(event("pattern_solutions", tenant=None, body=dict(copied.pattern), authorizer=_as(kind)))
        assert one.status == 200 and one.json["pattern"]["examples"] == [] and "TOKSECRET" not in one.raw["body"]
    exported = _invoke(event("export", tenant=None, query={"project": "pub1"}, authorizer=_as("project")))
    kinds = [json.loads(line)["kind"] for line in exported.raw["body"].splitlines()]
    assert "pattern" not in kinds and "link" not in kinds and kinds.count("memory") == 3, kinds
    assert json.loads(exported.raw["body"].splitlines()[-1])["counts"]["memory"] == 3


def test_subject_and_shared_keys_neither_read_nor_decide_the_capture_queue(copied):
    for kind in ("subject", "shared"):
        r = _invoke(event("candidates", tenant=None, query={"project": "pub1"}, authorizer=_as(kind)))
        assert r.status == 403, r
        r = _invoke(
            event("candidate_reject", tenant=None, path_params={"id": copied.ids["C"]}, body={}, authorizer=_as(kind))
        )
        assert r.status == 403, r
    listed = _invoke(event("candidates", tenant=None, query={"project": "pub1"}, authorizer=_as("project")))
    assert [c["id"] for c in listed.json["candidates"]] == [copied.ids["C"]]
