"""Governance over HTTP: retention classes, update with If-Match, history, revert, supersession
(synthetic HTTP API v2 events through the real handlers, on a real SQLite store)."""

from __future__ import annotations

from functions import routes
from functions.openapi import document

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
TEN_YEARS = 10 * 366 * 86_400


def stored(call, content="lives in Paris", **extra) -> dict:
    r = call(event("store", body={"project": "p", "content": content, **extra}))
    assert r.status == 201, r
    return r.json["memory"]


def patch(call, memory_id, body, *, if_match=None, tenant=None):
    e = event("update", path_params={"id": memory_id}, body=body, **({"tenant": tenant} if tenant else {}))
    if if_match is not None:
        e["headers"]["if-match"] = if_match
    return call(e)


def listed(call, **query) -> list[dict]:
    r = call(event("list", query={"project": "p", **query}))
    assert r.status == 200, r
    return r.json["memories"]


def test_the_governance_routes_are_in_the_table():
    assert {"update", "history", "revert"} <= {r.name for r in routes.ROUTES}


def test_store_sets_the_class_and_expiry(service, call):
    memory = stored(call, retention="ephemeral", ttl=3600)
    assert (memory["retention"], memory["effective_retention"]) == ("ephemeral", "ephemeral")
    assert memory["expires_at"] is not None
    implied = stored(call, content="a ttl alone", ttl=60)
    assert implied["retention"] == "ephemeral"
    pinned = stored(call, content="pinned", pinned=True)
    assert (pinned["retention"], pinned["effective_retention"]) == ("auto", "irreplaceable")


def test_bad_classes_and_ttls_are_4xx_naming_the_field_and_store_nothing(service, call):
    cases = [
        ({"retention": "forever"}, "retention"),
        ({"ttl": 0}, "ttl"),
        ({"ttl": TEN_YEARS + 1}, "ttl"),
        ({"ttl": "60"}, "ttl"),
        ({"retention": "permanent", "ttl": 60}, "ttl"),
        ({"ttl": 60, "expires_at": "2030-01-01T00:00:00Z"}, "expires_at"),
        ({"expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"supersedes": "nope"}, "supersedes"),
    ]
    for extra, field in cases:
        r = call(event("store", body={"project": "p", "content": "x", **extra}))
        assert r.status == 422, (extra, r)
        assert r.json["error"]["details"][0]["field"] == field, (extra, r)
    assert listed(call) == []


def test_list_filters_by_class(service, call):
    keep = stored(call, content="keep", retention="permanent")
    stored(call, content="other")
    assert [m["id"] for m in listed(call, retention="permanent")] == [keep["id"]]
    r = call(event("list", query={"project": "p", "retention": "auto"}))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "retention"


def test_update_with_if_match_keeps_history_and_a_lost_race_is_412(service, call):
    memory = stored(call, meta={"tags": ["city"]})
    r = patch(
        call,
        memory["id"],
        {"content": "lives in Berlin", "tags": ["moved"], "reason": "moved"},
        if_match=f'"{memory["sha256"]}"',
    )
    assert r.status == 200, r
    assert r.json["version"] == 2 and r.json["reembedded"] is True
    assert r.json["memory"]["content"] == "lives in Berlin" and r.json["memory"]["meta"]["tags"] == ["moved"]
    stale = patch(call, memory["id"], {"content": "lives in Rome"}, if_match=memory["sha256"])
    assert stale.status == 412 and stale.json["error"]["details"][0]["field"] == "If-Match"
    malformed = patch(call, memory["id"], {"content": "lives in Rome"}, if_match="W/abc")
    assert malformed.status == 422 and malformed.json["error"]["details"][0]["field"].lower() == "if-match"
    history = call(event("history", path_params={"id": memory["id"]}))
    assert history.status == 200
    assert [(v["version"], v["content"], v["current"]) for v in history.json["versions"]] == [
        (1, "lives in Paris", False),
        (2, "lives in Berlin", True),
    ]
    assert history.json["versions"][0]["reason"] == "moved"
    found = call(event("search", body={"project": "p", "query": "Berlin", "k": 3}))
    assert [h["content"] for h in found.json["results"]][:1] == ["lives in Berlin"]


def test_bad_updates_are_4xx_and_change_nothing(service, call):
    memory = stored(call)
    for body, field in [
        ({}, "body"),
        ({"retention": "forever"}, "retention"),
        ({"ttl": 0}, "ttl"),
        ({"ttl": 60}, "ttl"),
        ({"content": "x", "surprise": 1}, "surprise"),
    ]:
        r = patch(call, memory["id"], body)
        assert r.status == 422, (body, r)
        assert r.json["error"]["details"][0]["field"] == field, (body, r)
    assert patch(call, memory["id"], {"content": "x"}, tenant=BOB).status == 404
    got = call(event("get", path_params={"id": memory["id"]})).json["memory"]
    assert got["content"] == "lives in Paris" and got["updated_at"] == memory["updated_at"]


def test_changing_the_class_later_and_reverting(service, call):
    memory = stored(call)
    r = patch(call, memory["id"], {"retention": "ephemeral", "ttl": 120})
    assert r.status == 200 and r.json["memory"]["retention"] == "ephemeral" and r.json["memory"]["expires_at"]
    r = patch(call, memory["id"], {"retention": "permanent"})
    assert r.json["memory"]["retention"] == "permanent" and r.json["memory"]["expires_at"] is None
    back = call(event("revert", path_params={"id": memory["id"]}, body={"version": 1}))
    assert back.status == 200 and back.json["memory"]["retention"] == "auto" and back.json["version"] == 4
    assert call(event("revert", path_params={"id": memory["id"]}, body={"version": 99})).status == 404
    r = call(event("revert", path_params={"id": memory["id"]}, body={"version": 0}))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "version"
    actions = [a.action for a in service.store.audit_log(ALICE, memory_id=memory["id"])]
    assert actions[:3] == ["revert", "retention", "retention"]


def test_supersede_search_returns_the_current_one(service, call):
    old = stored(call, content="Ada lives in Paris")
    new = stored(call, content="Ada moved to Berlin", supersedes=old["id"])
    assert new["supersedes"] == old["id"]
    found = call(event("search", body={"project": "p", "query": "where does Ada live", "k": 5}))
    assert [h["id"] for h in found.json["results"]] == [new["id"]]
    assert f"{new['id']} superseded {old['id']}" in found.json["explanation"]
    walked = call(
        event("search", body={"project": "p", "query": "where does Ada live", "k": 5, "include_superseded": True})
    )
    assert [s["id"] for s in walked.json["results"][0]["superseded"]] == [old["id"]]
    kept = call(event("get", path_params={"id": old["id"]}))
    assert kept.status == 200 and kept.json["memory"]["superseded_by"] == new["id"]


def test_forget_of_an_irreplaceable_memory_needs_force(service, call):
    memory = stored(call, retention="irreplaceable")
    r = call(event("forget", path_params={"id": memory["id"]}))
    assert r.status == 409 and r.json["error"]["details"][0]["field"] == "force"
    assert call(event("get", path_params={"id": memory["id"]})).status == 200
    r = call(event("forget", path_params={"id": memory["id"]}, query={"force": "true"}))
    assert r.status == 200


def test_the_openapi_document_states_the_governance_limits():
    doc = document()
    schemas = doc["components"]["schemas"]
    store = schemas["StoreRequest"]["properties"]
    ttl = next(s for s in store["ttl"]["anyOf"] if s.get("type") == "integer")
    assert (ttl["minimum"], ttl["maximum"]) == (1, TEN_YEARS)
    retention = next(s for s in store["retention"]["anyOf"] if "enum" in s)
    assert set(retention["enum"]) == {"irreplaceable", "permanent", "replaceable", "ephemeral", "auto"}
    patch_op = doc["paths"]["/v1/memories/{id}"]["patch"]
    header = next(p for p in patch_op["parameters"] if p["in"] == "header")
    assert header["name"].lower() == "if-match" and "412" in patch_op["responses"]
    assert "[0-9a-f]{64}" in str(header["schema"])
