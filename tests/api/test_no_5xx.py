"""Inputs that once answered 500 (or were converted instead of refused), each at its root.

Every case here was found by schemathesis against ``capsule serve``; each test fails on the
code before the fix. Store failures use SQLite's own ``max_page_count`` limit, so SQLite
itself answers SQLITE_FULL ("database or disk is full") as it does on a full disk.
"""

from __future__ import annotations

import base64
import copy
import json
import sqlite3

import pytest

from capsule.core import limits
from functions.openapi import document

from .events import event
from .test_learning_routes import FIXPACK

ALICE = "arn:aws:iam::123456789012:user/alice"
OK = {"project": "api", "content": "Use BEGIN IMMEDIATE for SQLite writes"}


def stored(call, **extra) -> str:
    r = call(event("store", body={**OK, **extra}))
    assert r.status == 201, r
    return r.json["memory"]["id"]


def no_boilerplate(answer) -> None:
    assert "errors.pydantic.dev" not in answer.raw["body"] and "Value error," not in answer.raw["body"]


# ---- 1. a body that is not UTF-8 ------------------------------------------------


@pytest.mark.parametrize("route", ["store", "search", "solution_import", "solution_create"])
def test_a_body_that_is_not_utf8_is_400(service, call, route):
    e = event(route, raw_body="")
    e["body"], e["isBase64Encoded"] = base64.b64encode(b'{"project": "\xff\xfe", "content": "x"}').decode(), True
    answer = call(e)
    assert answer.status == 400, answer
    assert answer.json["error"]["code"] == "malformed_body" and answer.json["error"]["details"][0]["field"] == "body"


def test_a_utf8_body_sent_as_base64_still_works(service, call):
    e = event("store", raw_body="")
    e["body"], e["isBase64Encoded"] = base64.b64encode(json.dumps(OK).encode()).decode(), True
    assert call(e).status == 201


# ---- 2. deeply nested JSON --------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("store", "[" * 10_000, "body"),
        ("store", json.dumps(OK)[:-1] + ', "meta": {"x": ' + "[" * 40 + "1" + "]" * 40 + "}}", "meta.x.0.0"),
        ("search", '{"query": "q", "project": "p", "filters": ' + "[" * 5000 + "]" * 5000 + "}", "body"),
        ("search", '{"query": "q", "project": "p", "filters": ' + "[" * 40 + "]" * 40 + "}", "filters.0.0"),
        ("solution_import", '{"title": "t", "signatures": ' + '{"a": ' * 40 + "1" + "}" * 40 + "}", "signatures.a.a"),
    ],
)
def test_deep_nesting_is_a_4xx_naming_where(service, call, route, body, field):
    answer = call(event(route, raw_body=body))
    assert answer.status == 422, answer
    assert answer.json["error"]["details"][0]["field"].startswith(field)
    assert "nested deeper" in answer.json["error"]["message"]


def test_meta_nested_within_the_body_limit_names_its_own_limit(service, call):
    deep = {"x": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}}}
    answer = call(event("store", body={**OK, "meta": deep}))
    assert answer.status == 422 and answer.json["error"]["details"][0]["field"] == "meta"
    no_boilerplate(answer)


# ---- 3. times out of range, and rows that hold them ------------------------------


def test_a_time_past_year_9999_in_utc_is_refused_and_nothing_stored(service, call):
    answer = call(event("store", body={**OK, "occurred_at": "9999-12-31T23:59:59-14:00"}))
    assert answer.status == 422 and answer.json["error"]["details"][0]["field"] == "occurred_at", answer
    assert call(event("list", query={"project": "api"})).json["memories"] == []


def test_a_stored_row_with_such_a_time_never_makes_its_project_unreadable(service, call):
    mid = stored(call)
    conn = service.store._conn()
    conn.execute("UPDATE memories SET occurred_at = ?, created_at = ? WHERE id = ?", (253402351199.0, 1e13, mid))
    service.query_cache._entries.clear()
    assert call(event("get", path_params={"id": mid})).status == 200
    assert call(event("list", query={"project": "api"})).status == 200
    for body in ({"query": "BEGIN IMMEDIATE", "project": "api"}, {"query": "BEGIN IMMEDIATE", "global": True}):
        answer = call(event("search", body=body))
        assert answer.status == 200 and [h["id"] for h in answer.json["results"]] == [mid], answer


def test_times_are_strings_not_epoch_numbers(service, call):
    answer = call(event("store", body={**OK, "occurred_at": 1767225600}))
    assert answer.status == 422 and answer.json["error"]["details"][0]["field"] == "occurred_at"


# ---- 4. counters saturate ----------------------------------------------------------


def test_a_counter_at_its_limit_saturates_and_reads_stay_valid(service, call):
    body = {**copy.deepcopy(FIXPACK), "success_count": limits.MAX_COUNT}
    sid = call(event("solution_create", body=body)).json["solution"]["id"]
    applied = call(event("solution_apply", path_params={"id": sid}, body={"success": True}))
    assert applied.status == 200, applied
    assert applied.json["solution"]["success_count"] == limits.MAX_COUNT
    assert call(event("solution_list")).status == 200
    over = call(event("solution_create", body={**copy.deepcopy(FIXPACK), "title": "x", "success_count": 10**9 + 1}))
    assert over.status == 422 and over.json["error"]["details"][0]["field"] == "success_count"


def test_a_row_counted_past_the_limit_still_reads(service, call):
    sid = call(event("solution_create", body=copy.deepcopy(FIXPACK))).json["solution"]["id"]
    service.store._conn().execute("UPDATE solutions SET success = ? WHERE id = ?", (10**12, sid))
    answer = call(event("solution_get", path_params={"id": sid}))
    assert answer.status == 200 and answer.json["solution"]["success_count"] == limits.MAX_COUNT
    assert call(event("solution_list")).status == 200


# ---- 5. a full store is a 503 with Retry-After; reads still answer ---------------


def fill_up(service) -> None:
    conn = service.store._conn()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite now answers SQLITE_FULL on growth


def fill_cache_pages(service) -> None:
    """Take the cache table's last free space too, so its next row must grow the file."""
    conn = service.store._conn()
    for i in range(100_000):
        try:
            conn.execute("INSERT INTO embedding_cache VALUES ('filler', ?, randomblob(1500), 0)", (str(i),))
        except sqlite3.OperationalError as exc:
            assert "full" in str(exc)
            return
    raise AssertionError("the store never filled up")


def test_a_full_store_is_503_with_retry_after_and_nothing_half_written(service, call):
    stored(call)
    # No rolling limit, so the long ingest below is not refused for its size (409) before it is tried.
    assert call(event("project_settings", body={"project": "api", "retention_limit": "unlimited"})).status == 200
    fill_up(service)
    before = call(event("list", query={"project": "api"})).json["memories"]
    text = " ".join(f"line {i} of a long text about disks." for i in range(20_000))
    answer = call(event("ingest", body={"project": "api", "text": text}))
    assert answer.status == 503, answer
    assert int(answer.raw["headers"]["Retry-After"]) >= 1 and answer.json["error"]["code"] == "unavailable"
    assert call(event("list", query={"project": "api"})).json["memories"] == before


def test_search_answers_when_the_embedding_cache_cannot_be_written(service, call, caplog, monkeypatch):
    # As with a model, whose vectors the cache keeps (the hashing embedder's it does not).
    monkeypatch.setattr(type(service.embedder.inner), "worth_caching", True)
    mid = stored(call)
    service.embedder.worth_caching = True  # as with a model whose vectors are kept (hashing's are not)
    fill_up(service)
    fill_cache_pages(service)
    answer = call(event("search", body={"query": "SQLite writes, a query never embedded before", "project": "api"}))
    assert answer.status == 200, answer
    assert "embedder is unavailable" not in answer.json["explanation"]
    assert mid in [h["id"] for h in answer.json["results"]]
    assert "embedding cache not written" in caplog.text  # the write was tried, and failed


# ---- 6. strict JSON types, unknown fields named ----------------------------------


@pytest.mark.parametrize(
    ("route", "body", "field", "params"),
    [
        ("store", {**OK, "pinned": "yes"}, "pinned", None),
        ("feedback", {"helpful": "yes"}, "helpful", "id"),
        ("search", {"query": "q", "project": "api", "k": "5"}, "k", None),
        ("search", {"query": "q", "project": "api", "k": True}, "k", None),
        ("search", {"query": "q", "project": "api", "k": 5.5}, "k", None),
        ("project_settings", {"project": "api", "retention_limit": "10"}, "retention_limit", None),
        ("solution_search", {"error": "boom", "k": "3"}, "k", None),
        ("solution_apply", {"success": 1}, "success", "sid"),
    ],
)
def test_wrong_json_types_are_refused_not_converted(service, call, route, body, field, params):
    path_params = None
    if params == "id":
        path_params = {"id": stored(call)}
    elif params == "sid":
        path_params = {"id": call(event("solution_create", body=copy.deepcopy(FIXPACK))).json["solution"]["id"]}
    answer = call(event(route, body=body, path_params=path_params))
    assert answer.status == 422, answer
    assert answer.json["error"]["details"][0]["field"] == field
    no_boilerplate(answer)


def test_an_integral_number_is_an_integer(service, call):
    stored(call)
    assert call(event("search", body={"query": "SQLite", "project": "api", "k": 5.0})).status == 200


@pytest.mark.parametrize(
    ("route", "body", "message"),
    [
        ("store", {**OK, "pin": True}, "unknown field 'pin' (did you mean 'pinned'?)"),
        (
            "search",
            {"query": "q", "project": "api", "filters": {"tag": ["x"]}},
            "unknown field 'tag' (did you mean 'tags'?)",
        ),
        ("solution_search", {"error": "boom", "limit": 3}, "unknown field 'limit'"),
    ],
)
def test_an_unknown_field_is_named_with_the_nearest_known_one(service, call, route, body, message):
    answer = call(event(route, body=body))
    assert answer.status == 422 and message in answer.json["error"]["message"], answer
    no_boilerplate(answer)


# ---- 8. the right status and the right field --------------------------------------


def test_ten_thousand_tags_name_tags(service, call):
    answer = call(event("store", body={**OK, "meta": {"tags": ["t"] * 10_000}}))
    assert answer.status == 422 and answer.json["error"]["details"][0]["field"] == "meta.tags", answer


def test_any_cursor_of_the_documented_shape_is_a_position(service, call):
    stored(call)
    assert call(event("list", query={"project": "api", "cursor": "1.000000~00"})).json["memories"] == []
    assert call(event("list", query={"project": "api", "cursor": "not-a-cursor"})).status == 422


# ---- 7. the document states what the validators enforce --------------------------


def test_the_openapi_document_states_the_rules():
    doc = document()
    schemas = doc["components"]["schemas"]
    store = schemas["StoreRequest"]["properties"]
    assert store["project"]["pattern"] == r"^[^\x00-\x1f\x7f]*$"
    assert "pattern" in store["occurred_at"]["anyOf"][0]
    assert schemas["SearchRequest"]["anyOf"][0]["required"] == ["project"]
    assert schemas["MemoryMeta"]["propertyNames"]["pattern"]
    get = doc["paths"]["/v1/memories/{id}"]["get"]
    assert next(p for p in get["parameters"] if p["name"] == "id")["schema"]["maxLength"] == 128
    listing = next(p for p in doc["paths"]["/v1/memories"]["get"]["parameters"] if p["name"] == "cursor")
    assert "pattern" in json.dumps(listing["schema"])
    store_op = doc["paths"]["/v1/memories"]["post"]["responses"]
    assert "400" in store_op and "Retry-After" in store_op["503"]["headers"]
    assert "409" in doc["paths"]["/v1/memories/{id}/restore"]["post"]["responses"]


@pytest.mark.parametrize("value", ["yes", "1", "True", "on"])
def test_a_query_boolean_is_true_or_false(service, call, value):
    answer = call(event("list", query={"project": "api", "pinned_only": value}))
    assert answer.status == 422 and answer.json["error"]["details"][0]["field"] == "pinned_only", answer


def test_a_percent_encoded_id_is_measured_decoded(service, call):
    # 40 characters, 120 once percent-encoded: within the 128 the document allows.
    from urllib.parse import quote

    e = event("get", path_params={"id": quote("é" * 40)})
    answer = call(e)
    assert answer.status == 404 and "é" * 40 in answer.json["error"]["message"], answer


def test_equal_step_orders_keep_their_file_order(service, call):
    body = copy.deepcopy(FIXPACK)
    body["checks"] = [
        {"check_order": 1, "cmd": "first", "expect_exit_code": 0},
        {"check_order": 1, "cmd": "second", "expect_exit_code": 0},
    ]
    answer = call(event("solution_create", body=body))
    assert answer.status == 201, answer
    assert [c["cmd"] for c in answer.json["solution"]["checks"]] == ["first", "second"]
