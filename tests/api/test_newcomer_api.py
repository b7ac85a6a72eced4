"""What a newcomer sends first (issue 19): top-level tags, curl's default content type, and a
restore that puts a project over its limit."""

from __future__ import annotations

import json

import pytest

from capsule.core import limits

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"


def _store(call, body):
    return call(event("store", body={"project": "api", "content": "Use WAL mode", **body}))


def test_top_level_tags_are_the_memorys_tags(service, call):
    r = _store(call, {"tags": ["sqlite", "wal"]})
    assert r.status == 201, r
    memory = call(event("get", path_params={"id": r.json["memory"]["id"]})).json["memory"]
    assert memory["meta"]["tags"] == ["sqlite", "wal"]
    found = call(event("search", body={"query": "WAL", "project": "api", "filters": {"tags": ["wal"]}}))
    assert [h["id"] for h in found.json["results"]] == [memory["id"]]


def test_meta_tags_still_work_and_both_given_are_joined_without_repeats(service, call):
    alone = _store(call, {"content": "meta tags alone", "meta": {"tags": ["a"]}})
    assert alone.json["memory"]["meta"]["tags"] == ["a"]
    both = _store(call, {"content": "both", "meta": {"tags": ["a", "b"]}, "tags": ["b", "c"]})
    assert both.status == 201 and both.json["memory"]["meta"]["tags"] == ["a", "b", "c"]


def test_too_many_tags_together_are_refused_naming_tags(service, call):
    half = limits.MAX_TAGS // 2 + 1
    r = _store(call, {"meta": {"tags": [f"m{n}" for n in range(half)]}, "tags": [f"t{n}" for n in range(half)]})
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "tags", r
    assert str(limits.MAX_TAGS) in r.json["error"]["message"]
    bad = _store(call, {"tags": "sqlite"})  # a string is not a list of tags: not coerced
    assert bad.status == 422 and bad.json["error"]["details"][0]["field"] == "tags"
    assert service.projects(ALICE).projects == []


def test_ingest_takes_top_level_tags_on_every_chunk(service, call):
    text = "\n\n".join(f"Paragraph {n} about deployments and blue-green switching. " * 30 for n in range(6))
    r = call(event("ingest", body={"project": "docs", "text": text, "path": "deploy.md", "tags": ["deploy"]}))
    assert r.status == 201 and r.json["chunks"] > 1, r
    for memory_id in r.json["ids"]:
        got = call(event("get", path_params={"id": memory_id})).json["memory"]
        assert got["meta"]["tags"] == ["deploy"]


@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "text/plain; charset=utf-8", "multipart/form-data"]
)
def test_a_body_not_declared_as_json_is_a_415_naming_the_type(service, call, content_type):
    # curl -d without -H 'Content-Type: application/json' sends application/x-www-form-urlencoded.
    e = event("store", body={"project": "api", "content": "Use WAL mode"})
    e["headers"]["content-type"] = content_type
    r = call(e)
    assert r.status == 415, r
    declared = content_type.split(";")[0]
    assert f"'{declared}'" in r.json["error"]["message"] and "application/json" in r.json["error"]["message"]
    assert r.json["error"]["details"][0]["field"] == "content-type"
    assert service.projects(ALICE).projects == []


def test_restoring_past_the_limit_says_so_and_evicts_nothing(service, call):
    call(event("project_settings", body={"project": "small", "retention_limit": 3}))
    ids = []
    for n in range(4):
        r = call(event("store", body={"project": "small", "content": f"memory number {n}"}))
        ids.append(r.json["memory"]["id"])
    evicted = ids[0]  # the fourth store evicted the oldest
    assert call(event("get", path_params={"id": evicted})).status == 404
    r = call(event("restore", path_params={"id": evicted}))
    assert r.status == 200, r
    assert r.json["over_limit"] is True and r.json["memories"] == 4 and r.json["retention_limit"] == 3
    assert "over its limit of 3" in r.json["explanation"] and "nothing else was evicted" in r.json["explanation"]
    listed = call(event("list", query={"project": "small"})).json["memories"]
    assert sorted(m["id"] for m in listed) == sorted(ids)
    # Within the limit, a restore says nothing of it.
    call(event("forget", path_params={"id": ids[1]}))
    call(event("forget", path_params={"id": ids[2]}))
    back = call(event("restore", path_params={"id": ids[1]}))
    assert back.json["over_limit"] is False and "limit" not in back.json["explanation"]


def test_the_openapi_document_states_top_level_tags_and_the_restore_answer(service, call):
    doc = json.loads(call(event("openapi", tenant=None)).raw["body"])
    schemas = doc["components"]["schemas"]
    assert "tags" in schemas["StoreRequest"]["properties"] and "tags" in schemas["IngestRequest"]["properties"]
    assert {"over_limit", "memories", "retention_limit"} <= set(schemas["RestoreResult"]["properties"])
