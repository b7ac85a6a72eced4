"""Every handler, called as Lambda calls it, with synthetic HTTP API v2 events."""

import json

import pytest

from capsule.core import limits
from functions import routes

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"


def stored(call, content="Use BEGIN IMMEDIATE for SQLite writes", project="api", tenant=ALICE, **extra):
    r = call(event("store", tenant=tenant, body={"project": project, "content": content, **extra}))
    assert r.status == 201, r
    return r.json["memory"]["id"]


def test_every_route_has_a_handler_module(service, call):
    names = {r.name for r in routes.ROUTES}
    for route in routes.ROUTES:
        assert route.handler == f"functions.handlers.{route.name}:handler"
    assert {
        "store",
        "ingest",
        "search",
        "list",
        "get",
        "pin",
        "unpin",
        "forget",
        "restore",
        "feedback",
        "projects",
        "health",
        "openapi",
    } <= names


def test_store_then_get_list_search(service, call):
    mid = stored(call, meta={"tags": ["sqlite"], "type": "decision"})
    got = call(event("get", path_params={"id": mid}))
    assert got.status == 200 and got.json["memory"]["content"].startswith("Use BEGIN")
    listed = call(event("list", query={"project": "api"}))
    assert [m["id"] for m in listed.json["memories"]] == [mid]
    found = call(event("search", body={"query": "sqlite writes", "project": "api"}))
    assert found.status == 200 and found.json["results"][0]["id"] == mid
    assert set(found.json["results"][0]["components"]) == {"vector", "bm25", "time", "feedback", "outcome", "boost"}


def test_list_pages_with_the_cursor(service, call):
    ids = [stored(call, content=f"memory number {i}") for i in range(3)]
    first = call(event("list", query={"project": "api", "limit": 2}))
    assert len(first.json["memories"]) == 2 and first.json["next_cursor"]
    second = call(event("list", query={"project": "api", "limit": 2, "cursor": first.json["next_cursor"]}))
    seen = [m["id"] for m in first.json["memories"] + second.json["memories"]]
    assert sorted(seen) == sorted(ids) and second.json["next_cursor"] is None


def test_ingest_chunks_and_stores(service, call):
    text = "\n\n".join(f"Paragraph {i}: " + "words about sqlite locking " * 60 for i in range(8))
    r = call(event("ingest", body={"project": "docs", "text": text, "path": "notes.md"}))
    assert r.status == 201, r
    assert r.json["chunks"] == len(r.json["ids"]) > 1
    assert len(call(event("list", query={"project": "docs", "limit": 100})).json["memories"]) == r.json["chunks"]


def test_pin_unpin_forget_restore_feedback(service, call):
    mid = stored(call)
    assert call(event("pin", path_params={"id": mid})).json["memory"]["pinned"] is True
    assert call(event("list", query={"project": "api", "pinned_only": "true"})).json["memories"][0]["id"] == mid
    assert call(event("unpin", path_params={"id": mid})).json["memory"]["pinned"] is False
    r = call(event("feedback", path_params={"id": mid}, body={"helpful": False, "context": "wrong fix"}))
    assert r.status == 200 and r.json["memory"]["unhelpful"] == 1
    r = call(event("forget", path_params={"id": mid}, query={"reason": "outdated"}))
    assert r.status == 200 and r.json["memory"]["forgotten_at"] and "outdated" in r.json["explanation"]
    assert call(event("get", path_params={"id": mid})).status == 404
    assert call(event("restore", path_params={"id": mid})).json["memory"]["forgotten_at"] is None
    assert call(event("get", path_params={"id": mid})).status == 200


def test_projects_settings_and_health(service, call):
    stored(call, project="one")
    r = call(event("project_settings", body={"project": "one", "retention_limit": 7}))
    assert r.status == 200 and r.json["projects"][0]["retention_limit"] == 7
    projects = call(event("projects"))
    assert [p["project"] for p in projects.json["projects"]] == ["one"]
    health = call(event("health"))
    assert health.status == 200 and health.json["tenant"] == ALICE


def test_openapi_is_public(service, call):
    r = call(event("openapi", tenant=None))
    assert r.status == 200 and r.json["openapi"].startswith("3.")


def test_lambda_authorizer_context_names_the_tenant(service, call):
    r = call(event("store", authorizer={"lambda": {"tenant": "team-x"}}, body={"project": "p", "content": "hi"}))
    assert r.status == 201
    mid = r.json["memory"]["id"]
    assert call(event("get", authorizer={"lambda": {"tenant": "team-x"}}, path_params={"id": mid})).status == 200
    assert call(event("get", tenant="team-y", path_params={"id": mid})).status == 404


# ---- errors ---------------------------------------------------------------------


@pytest.mark.parametrize("route", [r for r in routes.ROUTES if r.auth])
def test_missing_identity_is_401(service, call, route):
    params = {"id": "x"} if "{id}" in route.path else None
    r = call(event(route.name, tenant=None, path_params=params, body={"project": "p", "content": "c"}))
    assert r.status == 401 and r.json["error"]["code"] == "unauthorized"


def test_empty_authorizer_is_401_and_stores_nothing(service, call):
    r = call(event("store", authorizer={"iam": {"userArn": ""}, "lambda": {}}, body={"project": "p", "content": "c"}))
    assert r.status == 401
    assert service.store.projects("") == []


def test_tenant_in_body_or_query_is_never_used(service, call):
    r = call(event("store", body={"project": "p", "content": "c", "tenant": BOB}))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "tenant"
    mid = stored(call, project="p", content="mine")
    r = call(event("get", tenant=BOB, path_params={"id": mid}, query={"tenant": ALICE}))
    # Refused by name like the body's (query_names); before strict query strings it was ignored (404).
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "tenant" and "mine" not in r.raw["body"]
    assert call(event("get", tenant=BOB, path_params={"id": mid})).status == 404


def test_body_over_the_limit_is_413_and_stores_nothing(service, call):
    big = "x" * (limits.MAX_BODY_BYTES + 1)
    r = call(event("ingest", body={"project": "p", "text": big}))
    assert r.status == 413 and r.json["error"]["code"] == "payload_too_large"
    r = call(event("store", raw_body=big, base64_body=True))
    assert r.status == 413
    assert service.projects(ALICE).projects == []


def test_content_over_its_own_limit_is_422_naming_the_field(service, call):
    r = call(event("store", body={"project": "p", "content": "x" * (limits.MAX_CONTENT_BYTES + 1)}))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "content"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"project": "p"}, "content"),
        ({"project": "", "content": "c"}, "project"),
        ({"project": "p", "content": "c", "meta": {"$where": 1}}, "meta"),
        ({"project": "p", "content": "c", "meta": {"tags": ["t"] * 33}}, "meta.tags"),
        ({"project": "p", "content": "c", "pinned": "maybe"}, "pinned"),
    ],
)
def test_invalid_store_is_422_naming_the_field(service, call, body, field):
    r = call(event("store", body=body))
    assert r.status == 422, r
    assert r.json["error"]["details"][0]["field"] == field
    assert r.json["error"]["message"].startswith(field)
    assert service.projects(ALICE).projects == []


def test_invalid_json_and_content_type(service, call):
    r = call(event("store", raw_body='{"project": "p", '))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "body"
    e = event("store", body={"project": "p", "content": "c"})
    e["headers"]["content-type"] = "text/plain"
    r = call(e)
    assert r.status == 415 and r.json["error"]["details"][0]["field"] == "content-type"


@pytest.mark.parametrize("body", [[{"project": "p", "content": "c"}], "c", 5, None])
def test_a_body_that_is_not_an_object_is_refused_not_unwrapped(service, call, body):
    # Powertools read an array body as its first item: [memory] was stored as memory.
    r = call(event("store", raw_body=json.dumps(body)))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "body", r
    assert call(event("list", query={"project": "p"})).json["memories"] == []


@pytest.mark.parametrize(
    "body, field",
    [
        ({"query": "x"}, "body"),  # neither project nor global: the model says why
        ({"query": "x", "project": "p", "k": 21}, "k"),
        ({"query": "", "project": "p"}, "query"),
        ({"query": "x", "project": "p", "weights": {"vector": 2}}, "weights.vector"),
        ({"query": "x", "project": "p", "as_of": "last week"}, "as_of"),
        ({"query": "x", "project": "p", "min_relevance": 1.5}, "min_relevance"),
    ],
)
def test_invalid_search_is_422(service, call, body, field):
    r = call(event("search", body=body))
    assert r.status == 422, r
    assert r.json["error"]["details"][0]["field"] == field


def test_search_as_of_a_date_in_the_body(service, call):
    """as_of in the HTTP body is the now of the search: "yesterday" is the day before it."""
    for day, text in ((3, "release checklist reviewed"), (9, "release checklist signed off")):
        assert (
            call(
                event("store", body={"project": "p", "content": text, "occurred_at": f"2024-02-0{day}T10:00:00Z"})
            ).status
            == 201
        )
    r = call(
        event(
            "search",
            body={
                "query": "what happened to the release checklist yesterday?",
                "project": "p",
                "as_of": "2024-02-10T08:00:00Z",
            },
        )
    )
    assert r.status == 200, r
    top = r.json["results"][0]
    assert top["content"] == "release checklist signed off" and top["components"]["boost"] > 0
    assert f"by meaning (cosine {top['components']['vector']:.2f})" in r.json["explanation"]


def test_invalid_query_parameters_are_422(service, call):
    assert call(event("list", query={})).json["error"]["details"][0]["field"] == "project"
    r = call(event("list", query={"project": "p", "limit": 0}))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "limit"
    r = call(event("list", query={"project": "p", "cursor": "garbage!"}))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "cursor"


@pytest.mark.parametrize("name", ["get", "pin", "unpin", "forget", "restore"])
def test_unknown_id_is_404(service, call, name):
    r = call(event(name, path_params={"id": "0123456789abcdef"}))
    assert r.status == 404 and r.json["error"]["code"] == "not_found"


def test_restore_of_an_active_memory_is_409(service, call):
    mid = stored(call)
    answer = call(event("restore", path_params={"id": mid}))
    assert answer.status == 409 and "not forgotten" in answer.json["error"]["message"]
    assert call(event("restore", path_params={"id": "no-such-id"})).status == 404
