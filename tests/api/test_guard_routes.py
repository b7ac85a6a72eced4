"""Secrets and personal data over the HTTP handlers: the default redacts, a project set to
refuse gets a 422 naming the kinds and nothing stored, bad settings are 422 naming the field."""

from tests.guard.corpus import AKIA

from .events import event


def test_a_key_is_redacted_by_default(service, call):
    r = call(event("store", body={"project": "p", "content": f"key {AKIA} for jane@acme.io"}))
    assert r.status == 201, r
    memory = r.json["memory"]
    assert AKIA not in memory["content"] and "[REDACTED:aws-access-key]" in memory["content"]
    assert [f["kind"] for f in memory["meta"]["_guard"]["pii"]] == ["email"]


def test_a_project_set_to_refuse_stores_nothing(service, call):
    r = call(event("project_settings", body={"project": "p", "secrets_policy": "refuse"}))
    assert r.status == 200, r
    assert r.json["projects"][0]["secrets_policy"] == "refuse" and r.json["projects"][0]["pii_policy"] == "flag"
    r = call(event("store", body={"project": "p", "content": f"key {AKIA}"}))
    assert r.status == 422 and "aws-access-key" in r.json["error"]["message"], r
    assert r.json["error"]["details"][0]["field"] == "content"
    r = call(event("ingest", body={"project": "p", "text": f"key {AKIA}"}))
    assert r.status == 422 and "aws-access-key" in r.json["error"]["message"], r
    assert call(event("list", query={"project": "p"})).json["memories"] == []
    other = call(event("store", body={"project": "other", "content": f"key {AKIA}"}))
    assert other.status == 201 and "[REDACTED:aws-access-key]" in other.json["memory"]["content"]


def test_bad_settings_are_named_and_change_nothing(service, call):
    r = call(event("project_settings", body={"project": "p", "secrets_policy": "mask"}))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "secrets_policy", r
    r = call(event("project_settings", body={"project": "p", "pii_policy": 1}))
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "pii_policy", r
    r = call(event("project_settings", body={"project": "p"}))
    assert r.status == 422, r
    r = call(event("project_settings", body={"project": "p", "secrets_polcy": "flag"}))
    assert r.status == 422 and "secrets_policy" in r.raw["body"], r
    assert call(event("projects")).json["projects"] == []
    assert service.store.guard_policies(service_tenant(call), "p") == {"secrets_policy": None, "pii_policy": None}


def service_tenant(call) -> str:
    return call(event("health")).json["tenant"]


def test_the_retention_limit_alone_still_works(service, call):
    call(event("store", body={"project": "one", "content": "hello"}))
    r = call(event("project_settings", body={"project": "one", "retention_limit": 7}))
    assert r.status == 200 and r.json["projects"][0]["retention_limit"] == 7
    assert r.json["projects"][0]["secrets_policy"] == "redact"
