"""Scoped keys and principals over the real handlers (synthetic HTTP API v2 events, a real
SQLite store): every route declares its scope and enforces it, project, subject and visibility
limits narrow what a key reaches, global search and list return only what it may see, and
SigV4 principals get scopes from the tenant's principal scopes."""

from __future__ import annotations

import json

import pytest

from capsule.governance.visibility import FULL
from functions import routes, scopes
from functions.openapi import document

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"
EMAIL = "write to jane@acme.io about the invoice"


def key(scope: dict | None, name: str = "bot", tenant: str = ALICE) -> dict:
    context = {"tenant": tenant, "key": name}
    if scope is not None:
        context["scope"] = json.dumps(scope)
    return {"lambda": context}


def stored(call, project="p", content="a fact", auth=None, **extra):
    return call(
        event("store", body={"project": project, "content": content, **extra}, **({"authorizer": auth} if auth else {}))
    )


def memory(call, **kw) -> dict:
    r = stored(call, **kw)
    assert r.status == 201, r
    return r.json["memory"]


def listed(call, project="p", auth=None, **query):
    return call(event("list", query={"project": project, **query}, **({"authorizer": auth} if auth else {})))


def contents(response) -> list[str]:
    assert response.status == 200, response
    return sorted(m["content"] for m in response.json["memories"])


# ---- the route table ------------------------------------------------------------------------


def test_every_route_declares_the_scope_it_needs():
    declared = set(scopes.ROUTE_SCOPES)
    names = {r.name for r in routes.ROUTES}
    assert names - declared == set(), "a route without a scope in functions.scopes.ROUTE_SCOPES"
    assert declared - names == set(), "a scope declared for a route that does not exist"
    for access, reach in scopes.ROUTE_SCOPES.values():
        assert access in ("read", "write", "admin")
        assert reach in ("memory", "project", "project_all", "filtered", "derived", "tenant", "any")


def test_an_undeclared_route_needs_admin_of_the_whole_tenant():
    assert scopes.route_scope("a_route_added_later") == ("admin", "tenant")


def test_the_openapi_document_says_which_scope_each_operation_needs():
    doc = document()
    for route in routes.ROUTES:
        op = doc["paths"][route.path][route.method.lower()]
        if not route.auth:
            assert "x-capsule-scope" not in op and op.get("security") in ([], None)
            continue
        access = scopes.route_scope(route.name)[0]
        assert op["x-capsule-scope"]["access"] == access, route.name
        assert op["x-capsule-scope"]["reach"] == scopes.route_scope(route.name)[1]
        assert op["security"] == [{"bearer": [access]}, {"sigv4": [access]}], route.name
        assert "403" in op["responses"], route.name


@pytest.mark.parametrize("route", [r for r in routes.ROUTES if r.auth], ids=lambda r: r.name)
def test_every_route_enforces_its_access_level(service, call, route):
    """A read-only key is refused every route that needs write or admin (403 naming the scope,
    before anything is parsed or run); a read route lets it through the scope check."""
    access = scopes.route_scope(route.name)[0]
    params = {"id": "m-none"} if "{id}" in route.path else None
    needs_body = route.method in ("POST", "PUT", "PATCH")
    r = call(event(route.name, authorizer=key({"access": "read"}), path_params=params, body={} if needs_body else None))
    if access == "read":
        assert r.status != 403, r
    else:
        assert r.status == 403, r
        assert r.json["error"]["details"][0]["missing"] == access
        assert f"needs the '{access}' scope" in r.json["error"]["message"]


def test_a_write_key_is_refused_admin_routes(service, call):
    r = call(
        event("project_settings", authorizer=key({"access": "write"}), body={"project": "p", "retention_limit": 5})
    )
    assert r.status == 403 and r.json["error"]["details"][0]["missing"] == "admin"


def test_keys_without_a_scope_keep_full_access(service, call):
    assert memory(call, auth=key(None))["visibility"] == "private"
    assert (
        call(event("project_settings", authorizer=key(None), body={"project": "p", "retention_limit": 5})).status == 200
    )


# ---- projects -------------------------------------------------------------------------------


def test_a_project_key_writes_and_reads_its_projects_only(service, call):
    bot = key({"projects": ["acme/*"]})
    assert stored(call, project="acme/api", auth=bot).status == 201
    r = stored(call, project="other", auth=bot)
    assert r.status == 403 and r.json["error"]["details"][0]["field"] == "project"
    assert contents(listed(call, project="other")) == []  # nothing was stored
    assert listed(call, project="other", auth=bot).status == 403


def test_a_memory_named_by_id_outside_the_keys_projects_is_refused(service, call):
    other = memory(call, project="other", content="not yours")
    bot = key({"projects": ["acme/*"]})
    for name in ("get", "pin", "history"):
        r = call(event(name, path_params={"id": other["id"]}, authorizer=bot))
        assert r.status == 403 and "project" in r.json["error"]["message"], (name, r)
    r = call(event("forget", path_params={"id": other["id"]}, authorizer=bot, body={}))
    assert r.status == 403
    assert call(event("get", path_params={"id": other["id"]})).json["memory"]["forgotten_at"] is None


def test_global_search_and_projects_return_only_the_keys_projects(service, call):
    memory(call, project="acme/api", content="deploy the api with blue green")
    memory(call, project="secret", content="deploy the secret thing with blue green")
    bot = key({"projects": ["acme/*"], "access": "read"})
    r = call(event("search", body={"query": "deploy blue green", "global": True, "mode": "bm25"}, authorizer=bot))
    assert r.status == 200, r
    assert {h["project"] for h in r.json["results"]} == {"acme/api"}
    everyone = call(event("search", body={"query": "deploy blue green", "global": True, "mode": "bm25"}))
    assert {h["project"] for h in everyone.json["results"]} == {"acme/api", "secret"}
    r = call(event("projects", authorizer=bot))
    assert [p["project"] for p in r.json["projects"]] == ["acme/api"]
    r = call(event("search", body={"query": "deploy", "project": "secret"}, authorizer=bot))
    assert r.status == 403


def test_routes_spanning_the_tenant_refuse_a_project_key(service, call):
    bot = key({"projects": ["acme/*"]})
    assert call(event("candidates", authorizer=bot)).status == 403
    assert call(event("candidates", authorizer=bot, query={"project": "acme/x"})).status == 200
    r = call(event("sync_apply", authorizer=key({"projects": ["acme/*"], "access": "admin"}), body={}))
    assert r.status == 403 and r.json["error"]["details"][0]["missing"] == "tenant"


def test_export_needs_a_key_that_sees_every_memory_of_the_project(service, call):
    memory(call, project="acme/x", content="private note")
    r = call(event("export", authorizer=key({"projects": ["acme/*"], "sees": "shared"}), query={"project": "acme/x"}))
    assert r.status == 403 and r.json["error"]["details"][0]["missing"] == "sees:private"
    r = call(event("export", authorizer=key({"subjects": ["alice"]}), query={"project": "acme/x"}))
    assert r.status == 403
    assert call(event("export", authorizer=key({"projects": ["acme/*"]}), query={"project": "other"})).status == 403
    # the export itself is JSON Lines (not what `call` reads): the check alone lets it through
    route, ok = routes.by_name("export"), event("export", query={"project": "acme/x"})
    scopes.check(route, ok, None, scopes.reach_of({"projects": ["acme/*"]}, "key"), lambda _: None)


# ---- subjects and visibility ------------------------------------------------------------------


def test_a_subject_key_sees_and_writes_its_subjects_only(service, call):
    memory(call, content="alice likes tea", subject="alice")
    bob = memory(call, content="bob likes coffee", subject="bob")
    memory(call, content="general fact")
    alice_bot = key({"subjects": ["alice"]})
    assert contents(listed(call, auth=alice_bot)) == ["alice likes tea"]
    assert listed(call, auth=alice_bot, subject="bob").status == 403
    r = call(event("get", path_params={"id": bob["id"]}, authorizer=alice_bot))
    assert r.status == 403 and r.json["error"]["details"][0]["field"] == "subject"
    r = stored(call, content="about nobody", auth=alice_bot)
    assert r.status == 403 and r.json["error"]["details"][0]["field"] == "subject"
    assert stored(call, content="alice moved", subject="alice", auth=alice_bot).status == 201
    r = call(event("search", body={"query": "likes", "project": "p", "mode": "bm25"}, authorizer=alice_bot))
    assert [h["content"] for h in r.json["results"]] == ["alice likes tea"]


def test_visibility_is_a_ladder_of_what_a_key_sees(service, call):
    private = memory(call, content="private note")
    memory(call, content="team note", visibility="shared")
    memory(call, content="world note", visibility="public")
    assert contents(listed(call, auth=key({"sees": "shared"}))) == ["team note", "world note"]
    public = key({"sees": "public", "access": "read"})
    assert contents(listed(call, auth=public)) == ["world note"]
    assert contents(listed(call)) == ["private note", "team note", "world note"]
    assert contents(listed(call, visibility="shared")) == ["team note"]
    r = call(event("get", path_params={"id": private["id"]}, authorizer=public))
    assert r.status == 403 and r.json["error"]["details"][0]["field"] == "visibility"
    r = call(event("search", body={"query": "note", "global": True, "mode": "bm25"}, authorizer=public))
    assert [h["content"] for h in r.json["results"]] == ["world note"]
    r = stored(call, content="a private one", auth=key({"sees": "shared"}))
    assert r.status == 403 and r.json["error"]["details"][0]["field"] == "visibility"


def test_a_public_memory_with_flagged_personal_data_is_refused_and_nothing_stored(service, call):
    r = stored(call, content=EMAIL, visibility="public")
    assert r.status == 409, r
    assert r.json["error"]["details"][0]["field"] == "visibility"
    assert "email" in r.json["error"]["details"][0]["flags"]
    assert contents(listed(call)) == []
    assert memory(call, content=EMAIL, visibility="shared")["visibility"] == "shared"


def test_patch_changes_visibility_and_subject_with_an_audit_record(service, call):
    m = memory(call, content="plain fact")
    r = call(event("update", path_params={"id": m["id"]}, body={"visibility": "shared", "subject": "alice"}))
    assert r.status == 200, r
    assert (r.json["memory"]["visibility"], r.json["memory"]["subject"]) == ("shared", "alice")
    audit = [a for a in service.store.audit_log(ALICE) if a.memory_id == m["id"]]
    assert [a.action for a in audit] == ["visibility"]
    assert "visibility private -> shared" in audit[0].reason and "subject (none) -> alice" in audit[0].reason


def test_patch_to_public_is_refused_until_the_personal_data_is_redacted(service, call):
    m = memory(call, content=EMAIL)
    r = call(event("update", path_params={"id": m["id"]}, body={"visibility": "public"}))
    assert r.status == 409 and "email" in r.json["error"]["message"]
    assert call(event("get", path_params={"id": m["id"]})).json["memory"]["visibility"] == "private"
    assert any(a.action == "refuse" and "public" in a.reason for a in service.store.audit_log(ALICE))
    r = call(
        event(
            "update",
            path_params={"id": m["id"]},
            body={"content": "write to the customer about the invoice", "visibility": "public"},
        )
    )
    assert r.status == 200, r
    assert r.json["memory"]["visibility"] == "public"


def test_a_key_cannot_widen_a_memory_beyond_what_it_sees(service, call):
    m = memory(call, content="team note", visibility="shared")
    r = call(
        event("update", path_params={"id": m["id"]}, body={"visibility": "private"}, authorizer=key({"sees": "shared"}))
    )
    assert r.status == 403 and r.json["error"]["details"][0]["field"] == "visibility"


# ---- strict at the edge -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra,field",
    [
        ({"visibility": "world"}, "visibility"),
        ({"visibility": 1}, "visibility"),
        ({"subject": ""}, "subject"),
        ({"subject": 7}, "subject"),
        ({"subject": "a\nb"}, "subject"),
    ],
)
def test_bad_visibility_or_subject_is_422_naming_the_field(service, call, extra, field):
    r = stored(call, **extra)
    assert r.status == 422, r
    assert r.json["error"]["details"][0]["field"] == field
    assert contents(listed(call)) == []


def test_list_refuses_an_unknown_visibility(service, call):
    r = listed(call, visibility="everyone")
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "visibility"


# ---- principal scopes (SigV4) ---------------------------------------------------------------

ROLE = "arn:aws:sts::123456789012:assumed-role/Dev/{}"


def as_session(name: str) -> dict:
    return {
        "iam": {
            "accessKey": "ASIAEXAMPLE",
            "accountId": "123456789012",
            "callerId": "AROAEXAMPLE",
            "principalOrgId": None,
            "userArn": ROLE.format(name),
            "userId": "AROAEXAMPLE:" + name,
        }
    }


def put_rules(call, rules, session="admin"):
    return call(event("principal_scopes_set", authorizer=as_session(session), body={"rules": rules}))


def test_principals_get_the_scope_of_the_first_rule_matching_their_arn(service, call):
    r = put_rules(
        call,
        [
            {"principal": ROLE.format("ci-*"), "scope": {"access": "read"}},
            {"principal": ROLE.format("bot-*"), "scope": {"projects": ["acme/*"]}},
        ],
    )
    assert r.status == 200, r
    r = call(event("store", authorizer=as_session("ci-42"), body={"project": "p", "content": "x"}))
    assert r.status == 403 and r.json["error"]["details"][0]["missing"] == "write"
    r = call(event("store", authorizer=as_session("bot-1"), body={"project": "p", "content": "x"}))
    assert r.status == 403 and r.json["error"]["details"][0]["field"] == "project"
    assert call(event("store", authorizer=as_session("admin"), body={"project": "p", "content": "x"})).status == 201
    me = call(event("whoami", authorizer=as_session("ci-42")))
    assert me.json["scope"]["access"] == "read" and me.json["who"] == ROLE.format("ci-42")
    listed_rules = call(event("principal_scopes", authorizer=as_session("admin"))).json["rules"]
    assert [rule["principal"] for rule in listed_rules] == [ROLE.format("ci-*"), ROLE.format("bot-*")]


def test_rules_that_would_lock_out_their_author_are_refused(service, call):
    r = put_rules(call, [{"principal": ROLE.format("*"), "scope": {"access": "write"}}])
    assert r.status == 409 and r.json["error"]["details"][0]["field"] == "rules"
    assert call(event("principal_scopes", authorizer=as_session("admin"))).json["rules"] == []


@pytest.mark.parametrize(
    "rule,field",
    [
        ({"principal": "arn:[", "scope": {}}, "rules.0.principal"),
        ({"principal": "arn:*", "scope": {"access": "owner"}}, "rules.0.scope.access"),
        ({"principal": "arn:*", "scope": {"projets": ["x"]}}, "rules.0.scope.projets"),
        ({"principal": "arn:*", "scope": {"projects": ["a[]"]}}, "rules.0.scope.projects"),
        ({"principal": "arn:*", "scope": {"sees": "everyone"}}, "rules.0.scope.sees"),
        ({"principal": "arn:*"}, "rules.0.scope"),
    ],
)
def test_bad_principal_rules_are_422_naming_the_field(service, call, rule, field):
    r = put_rules(call, [rule])
    assert r.status == 422, r
    assert r.json["error"]["details"][0]["field"] == field
    assert call(event("principal_scopes", authorizer=as_session("admin"))).json["rules"] == []


def test_a_stored_scope_that_no_longer_parses_reaches_nothing():
    e = event("store", authorizer={"lambda": {"tenant": ALICE, "key": "old", "scope": "{not json"}})
    reach = scopes.caller_reach(e, lambda: [])
    assert reach is not FULL and not reach.has_access("write") and reach.projects == ()


def test_whoami_of_a_key_whose_scope_no_longer_parses_says_it_reaches_nothing(service, call):
    r = call(event("whoami", authorizer={"lambda": {"tenant": ALICE, "key": "old", "scope": "{not json"}}))
    assert r.status == 200, r
    assert r.json["scope"] == {"access": "read", "projects": [], "subjects": [], "sees": "public"}
