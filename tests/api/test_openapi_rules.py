"""The rules across a body's fields are in the OpenAPI document, and say what the server checks.

Each body is judged twice: by the document's schema (jsonschema, as a generated client or
schemathesis reads it) and by the real handler on a real SQLite store. They must agree: what the
schema refuses the server refuses (422), and what it admits the server admits, except for the
rules the schema's descriptions name as checked against the clock or the stored data.
"""

from __future__ import annotations

import copy
import itertools
import json
from datetime import UTC, datetime, timedelta

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from capsule.core.models import PROJECT_SETTINGS
from capsule.governance.models import UPDATABLE
from capsule.governance.names import CLASSES
from capsule.sync import exchange
from capsule.transfer import format as fmt
from functions import idempotency
from functions.openapi import document

from .events import event

ABSENT = object()  # a field left out of the body
SOON = (datetime.now(UTC) + timedelta(days=3)).isoformat()


def request_schema(operation: str) -> Draft202012Validator:
    doc = document()
    op = next(o for item in doc["paths"].values() for o in item.values() if o.get("operationId") == operation)
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    return Draft202012Validator({**schema, "components": doc["components"]}, format_checker=FormatChecker())


def admits(validator: Draft202012Validator, body: dict) -> bool:
    return validator.is_valid(body)


def body_of(**fields) -> dict:
    return {name: value for name, value in fields.items() if value is not ABSENT}


# ---- store and ingest: one expiry at most, and only for the expiring class ----------------------

EXPIRY_GRID = list(itertools.product([ABSENT, None, *CLASSES], [ABSENT, None, 60], [ABSENT, None, SOON]))


def test_the_document_refuses_both_expiries_and_an_expiry_with_a_class_that_does_not_expire():
    schema = request_schema("store")
    base = {"project": "p", "content": "x"}
    assert not admits(schema, {**base, "ttl": 60, "expires_at": SOON})
    assert not admits(schema, {**base, "retention": "permanent", "ttl": 60})
    assert not admits(schema, {**base, "retention": "auto", "expires_at": SOON})
    assert admits(schema, {**base, "ttl": 60})
    assert admits(schema, {**base, "retention": "ephemeral", "expires_at": SOON})
    assert admits(schema, {**base, "retention": "permanent", "ttl": None, "expires_at": None})


@pytest.mark.parametrize("route, text_field", [("store", "content"), ("ingest", "text")])
def test_store_and_ingest_refuse_exactly_the_expiry_combinations_the_schema_refuses(service, call, route, text_field):
    schema = request_schema(route)
    for n, (retention, ttl, expires_at) in enumerate(EXPIRY_GRID):
        body = body_of(project="p", retention=retention, ttl=ttl, expires_at=expires_at)
        body[text_field] = f"memory number {n} of the grid"
        answer = call(event(route, body=body))
        assert answer.status in (201, 422), (body, answer)
        assert admits(schema, body) == (answer.status == 201), (body, answer)


# ---- update: at least one change; the expiry rules the stored memory does not decide --------------


def test_the_document_refuses_an_update_that_changes_nothing():
    schema = request_schema("update")
    assert not admits(schema, {})
    assert not admits(schema, {"reason": "no change given"})
    assert not admits(schema, {name: None for name in UPDATABLE})
    assert admits(schema, {"explanation": "a change"})


def test_update_refuses_exactly_the_bodies_without_a_change_the_schema_refuses(service, call):
    schema = request_schema("update")
    memory = call(event("store", body={"project": "p", "content": "a memory to change"})).json["memory"]
    values = {
        "content": "changed",
        "tags": ["t"],
        "meta": {"type": "note"},
        "explanation": "why",
        "retention": "permanent",
        "ttl": 60,
        "expires_at": SOON,
        "visibility": "shared",
        "subject": "ann",
    }
    assert set(values) == set(UPDATABLE)
    bodies = [{}, {"reason": "nothing"}, {name: None for name in UPDATABLE}, *({name: None} for name in UPDATABLE)]
    bodies += [{name: value} for name, value in values.items() if name not in ("ttl", "expires_at")]
    for body in bodies:
        answer = call(event("update", path_params={"id": memory["id"]}, body=body))
        assert answer.status in (200, 422), (body, answer)
        assert admits(schema, body) == (answer.status == 200), (body, answer)


def test_update_expiry_rules_agree_with_the_schema_for_an_ephemeral_memory_and_hold_for_any(service, call):
    """For a memory already ephemeral the schema decides alone; for a permanent one, what the schema
    refuses is refused too (and more: an expiry without retention, which the stored class decides)."""
    schema = request_schema("update")
    for kept, exact in (("ephemeral", True), ("permanent", False)):
        for n, (retention, ttl, expires_at) in enumerate(EXPIRY_GRID):
            body = body_of(retention=retention, ttl=ttl, expires_at=expires_at, explanation=f"change {n}")
            memory = call(event("store", body={"project": "p", "content": f"{kept} {n}", "retention": kept})).json
            answer = call(event("update", path_params={"id": memory["memory"]["id"]}, body=body))
            assert answer.status in (200, 422), (kept, body, answer)
            if exact or not admits(schema, body):
                assert admits(schema, body) == (answer.status == 200), (kept, body, answer)


# ---- project settings: at least one setting ---------------------------------------------------------


def test_project_settings_refuse_exactly_the_bodies_without_a_setting_the_schema_refuses(service, call):
    schema = request_schema("project_settings")
    values = {
        "retention_limit": 50,
        "ephemeral_ttl": 60,
        "secrets_policy": "flag",
        "pii_policy": "flag",
        "encryption": "flagged",
    }
    assert set(values) == set(PROJECT_SETTINGS)
    for body in [{}, *({name: value} for name, value in values.items())]:
        body = {"project": "p", **body}
        answer = call(event("project_settings", body=body))
        assert answer.status in (200, 422), (body, answer)
        assert admits(schema, body) == (answer.status == 200), (body, answer)
    assert not admits(schema, {"project": "p"})


# ---- sync/apply: each item's memory and votes are export rows, typed as the format's models ----------


def test_the_item_schema_is_the_export_formats_memory_and_feedback_rows():
    item = document()["components"]["schemas"]["Item"]["properties"]
    for name, model in (("memory", fmt.Memory), ("votes", fmt.Feedback)):
        schema = item[name]["items"] if name == "votes" else item[name]
        assert set(schema["properties"]) == set(model.model_fields), name
        assert set(schema["required"]) == {n for n, f in model.model_fields.items() if f.is_required()}, name
        assert schema["additionalProperties"] is False, name


@pytest.fixture
def exported(service, call):
    """A real item of the sync exchange: a stored memory with a vote, as a peer sends it."""
    memory = call(event("store", body={"project": "p", "content": "syncs across peers", "meta": {"a": {"b": 1}}}))
    call(event("feedback", path_params={"id": memory.json["memory"]["id"]}, body={"helpful": True}))
    page = exchange.changes(service, "arn:aws:iam::123456789012:user/alice", "p", after=None, limit=10)
    return json.loads(json.dumps(page.items[0]))


def _broken(item: dict, change) -> dict:
    copied = copy.deepcopy(item)
    change(copied)
    return copied


ROW_BREAKS = {
    "an unknown field": lambda i: i["memory"].update(colour="red"),
    "a field left out": lambda i: i["memory"].pop("sha256"),
    "a string for a count": lambda i: i["memory"].update(helpful="1"),
    "a vector without its dims": lambda i: i["memory"].update(dims=None),
    "dims without a vector": lambda i: i["memory"].update(embedding=None),
    "a vector without its model": lambda i: i["memory"].update(model=None),
    "a vector that is not base64": lambda i: i["memory"].update(embedding="AAA"),
    "a meta key starting with $": lambda i: i["memory"]["meta"].update({"$where": 1}),
    "a nested meta key with a dot": lambda i: i["memory"]["meta"]["a"].update({"b.c": 1}),
    "a vote with an unknown field": lambda i: i["votes"][0].update(weight=2),
    "a vote of another kind": lambda i: i["votes"][0].update(kind="audit"),
    # SQLite's INTEGER holds no larger: such a count was a 500, and is in the schema now.
    "a count over 64 bits": lambda i: i["memory"].update(helpful=2**63),
}


def test_sync_apply_refuses_each_broken_row_the_schema_refuses_and_admits_the_real_one(service, call, exported):
    schema = request_schema("sync_apply")
    assert exported["votes"] and exported["memory"]["embedding"]
    assert admits(schema, {"project": "p", "items": [exported]})
    assert call(event("sync_apply", body={"project": "p", "items": [exported]})).status == 200
    no_vector = _broken(exported, lambda i: i["memory"].update(embedding=None, dims=None, model=None))
    assert admits(schema, {"project": "p", "items": [no_vector]})
    assert call(event("sync_apply", body={"project": "p", "items": [no_vector]})).status == 200
    # JSON Schema's integer, as schemathesis sends one: 3.0 is the integer 3 (it was refused).
    whole = _broken(exported, lambda i: i["memory"].update(helpful=3.0, chunk_index=0.0))
    assert admits(schema, {"project": "p", "items": [whole]})
    assert call(event("sync_apply", body={"project": "p", "items": [whole]})).status == 200
    for why, change in ROW_BREAKS.items():
        body = {"project": "p", "items": [_broken(exported, change)]}
        assert not admits(schema, body), why
        answer = call(event("sync_apply", body=body))
        assert answer.status == 422, (why, answer)


def test_the_vector_pattern_is_the_checks_own_rule():
    pattern = Draft202012Validator({"type": "string", "pattern": fmt.BASE64_PATTERN})
    alphabet = "Aa+/=!"
    for size in range(9):
        for text in (
            map("".join, itertools.product(alphabet, repeat=size))
            if size < 6
            else ["A" * size, "A" * (size - 2) + "=="]
        ):
            try:
                fmt._decoded_size(text)
                checked = True
            except ValueError:
                checked = False
            assert pattern.is_valid(text) == checked, text


def test_an_items_fields_are_checked_as_the_rows_own_and_a_bad_one_leaves_the_project_readable(service, call, exported):
    """A field of the record the row does not carry was set unchecked: {"retention": 5} was stored and
    every list of the project answered 500 from then on."""
    for bad in ({"retention": 5}, {"visibility": []}, {"expires_at": {"$time": "soon"}}, {"subject": ""}):
        answer = call(event("sync_apply", body={"project": "p", "items": [{**exported, "fields": bad}]}))
        assert answer.status == 422, (bad, answer)
        assert answer.json["error"]["details"][0]["field"] == f"items[0].fields.{next(iter(bad))}", answer
        assert call(event("list", query={"project": "p"})).status == 200
    kept = call(
        event("sync_apply", body={"project": "p", "items": [{**exported, "fields": {"retention": "permanent"}}]})
    )
    assert kept.status == 200, kept
    listed = call(event("list", query={"project": "p"}))
    assert [m["retention"] for m in listed.json["memories"]] == ["permanent"]


def test_every_field_an_item_carries_beside_its_row_is_a_field_of_the_row():
    """So each is checked by the row's model (a field the row lacked would be refused as unknown)."""
    from dataclasses import fields

    from capsule.core.records import MemoryRecord
    from capsule.sync.rows import EXPORTED

    assert {f.name for f in fields(MemoryRecord)} - EXPORTED <= set(fmt.Memory.model_fields)


def test_each_rule_a_schema_cannot_state_is_an_x_capsule_rules_entry_with_a_documented_status():
    """What the schemas cannot say (relative to now, to the stored data, across fields) is stated
    beside them, as `x-capsule-rules` (the fuzz test reads it: tests/serve/test_fuzz.py)."""
    doc = document()
    stated = {}
    for item in doc["paths"].values():
        for op in item.values():
            for rule in op.get("x-capsule-rules", []):
                assert set(rule) == {"status", "rule"} and rule["rule"].strip(), (op["operationId"], rule)
                assert rule["status"] in (412, 422), (op["operationId"], rule)
                assert str(rule["status"]) in op["responses"], (op["operationId"], rule)  # a documented answer
                stated.setdefault(op["operationId"], []).append(rule["status"])
    assert "x-capsule-rules" in doc["info"]["description"]
    # Every write that takes an Idempotency-Key: a key already used for another request is stored data.
    assert stated.keys() == {
        "store",
        "ingest",
        "update",
        "revert",
        "solution_create",
        "solution_update",
        "solution_import",
        "sync_apply",
        "import_data",
        "usage",  # the window's span, and until after since
    } | set(idempotency.ROUTES), stated
    assert 412 in stated["update"] and 412 in stated["revert"]
