"""GET /v1/memories?project=P&forgotten=true: the forgotten memories, restorable, from the API
(issue 19 item 10: the console could only show what this tab itself had forgotten)."""

import pytest

from functions.openapi import document

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"


def stored(call, content, project="api", tenant=ALICE):
    r = call(event("store", tenant=tenant, body={"project": project, "content": content}))
    assert r.status == 201, r
    return r.json["memory"]["id"]


def listed(call, tenant=ALICE, **query):
    r = call(event("list", tenant=tenant, query={"project": "api", **query}))
    assert r.status == 200, r
    return r.json


def test_forgotten_lists_only_the_forgotten_until_restored(service, call):
    keep, drop, drop_too = (stored(call, text) for text in ("keep me", "drop me", "drop me too"))
    for mid in (drop, drop_too):
        assert call(event("forget", path_params={"id": mid})).status == 200
    answer = listed(call, forgotten="true")
    assert [m["id"] for m in answer["memories"]] == [drop_too, drop]
    assert all(m["forgotten_at"] for m in answer["memories"])
    assert answer["explanation"].startswith("2 forgotten memories of project 'api'")
    assert [m["id"] for m in listed(call, forgotten="false")["memories"]] == [keep]
    assert [m["id"] for m in listed(call)["memories"]] == [keep]

    assert call(event("restore", path_params={"id": drop})).status == 200
    assert [m["id"] for m in listed(call, forgotten="true")["memories"]] == [drop_too]
    assert listed(call, tenant=BOB, forgotten="true")["memories"] == []  # another tenant sees none


def test_forgotten_pages_with_the_cursor(service, call):
    ids = [stored(call, f"forgotten number {n}") for n in range(3)]
    for mid in ids:
        call(event("forget", path_params={"id": mid}))
    first = listed(call, forgotten="true", limit=2)
    assert len(first["memories"]) == 2 and first["next_cursor"]
    rest = listed(call, forgotten="true", cursor=first["next_cursor"])
    assert [m["id"] for m in first["memories"] + rest["memories"]] == ids[::-1]


@pytest.mark.parametrize("value", ["yes", "1", "True", "forgotten", ""])
def test_a_value_other_than_true_or_false_is_422_naming_forgotten(service, call, value):
    mid = stored(call, "still here")
    answer = call(event("list", query={"project": "api", "forgotten": value}))
    assert answer.status == 422 and answer.json["error"]["details"][0]["field"] == "forgotten", answer
    assert call(event("get", path_params={"id": mid})).status == 200  # nothing changed


def test_forgotten_is_documented_as_a_boolean_query_parameter():
    parameters = document()["paths"]["/v1/memories"]["get"]["parameters"]
    forgotten = next(p for p in parameters if p["name"] == "forgotten")
    assert forgotten["in"] == "query" and forgotten["schema"]["type"] == "boolean"
    assert forgotten["schema"]["default"] is False and "restor" in forgotten.get("description", "") + str(
        forgotten["schema"]
    )


def test_an_unknown_query_parameter_is_refused_with_its_name_and_the_nearest(service, call):
    # Before: Powertools ignored it, and a typo listed the active memories as if asked for them.
    mid = stored(call, "still listed")
    answer = call(event("list", query={"project": "api", "forgoten": "true"}))
    assert answer.status == 422, answer
    detail = answer.json["error"]["details"][0]
    assert detail["field"] == "forgoten" and "did you mean 'forgotten'" in detail["message"]
    answer = call(event("get", path_params={"id": mid}, query={"verbose": "true"}))
    assert answer.status == 422 and answer.json["error"]["details"][0]["field"] == "verbose"
    answer = call(event("forget", path_params={"id": mid}, query={"reasons": "x"}))
    assert answer.status == 422 and "did you mean 'reason'" in answer.json["error"]["message"]
    assert call(event("get", path_params={"id": mid})).status == 200  # nothing changed


def test_an_unknown_query_parameter_after_a_missing_identity_is_still_401(service, call):
    e = event("list", query={"project": "api", "nope": "1"})
    e["requestContext"].pop("authorizer", None)
    assert call(e).status == 401
