"""Tenant B can never read, list, search, change, vote on or forget tenant A's memories."""

import pytest

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"


@pytest.fixture
def alices(service, call):
    r = call(event("store", tenant=ALICE, body={"project": "shared-name", "content": "alice's secret about sqlite"}))
    assert r.status == 201
    return r.json["memory"]["id"]


def alice_sees(call, mid):
    return call(event("get", tenant=ALICE, path_params={"id": mid})).json["memory"]


@pytest.mark.parametrize(
    "name, body",
    [
        ("get", None),
        ("pin", None),
        ("unpin", None),
        ("forget", None),
        ("restore", None),
        ("feedback", {"helpful": True}),
    ],
)
def test_another_tenants_id_is_404_and_unchanged(call, alices, name, body):
    before = alice_sees(call, alices)
    r = call(event(name, tenant=BOB, path_params={"id": alices}, body=body))
    assert r.status == 404
    assert r.json["error"]["message"] in (f"no memory {alices}", f"no forgotten memory {alices}")
    assert alice_sees(call, alices) == before


def test_restore_of_another_tenants_forgotten_memory_is_404(call, alices):
    assert call(event("forget", tenant=ALICE, path_params={"id": alices})).status == 200
    assert call(event("restore", tenant=BOB, path_params={"id": alices})).status == 404
    assert call(event("get", tenant=ALICE, path_params={"id": alices})).status == 404  # still forgotten


def test_list_and_search_stay_inside_the_tenant(call, alices):
    assert call(event("list", tenant=BOB, query={"project": "shared-name"})).json["memories"] == []
    r = call(event("search", tenant=BOB, body={"query": "alice secret sqlite", "project": "shared-name"}))
    assert r.status == 200 and r.json["results"] == []
    r = call(event("search", tenant=BOB, body={"query": "alice secret sqlite", "global": True}))
    assert r.json["results"] == []
    assert call(event("projects", tenant=BOB)).json["projects"] == []
    # ...while Alice finds it both ways.
    r = call(event("search", tenant=ALICE, body={"query": "alice secret sqlite", "global": True}))
    assert [h["id"] for h in r.json["results"]] == [alices]


def test_same_content_for_two_tenants_is_two_memories(call, alices):
    r = call(event("store", tenant=BOB, body={"project": "shared-name", "content": "alice's secret about sqlite"}))
    assert r.status == 201 and r.json["deduplicated"] is False and r.json["memory"]["id"] != alices


def test_retention_limit_is_per_tenant(call, alices):
    r = call(event("project_settings", tenant=BOB, body={"project": "shared-name", "retention_limit": 1}))
    assert r.status == 200
    alice = call(event("projects", tenant=ALICE)).json["projects"][0]
    assert alice["retention_limit"] != 1
