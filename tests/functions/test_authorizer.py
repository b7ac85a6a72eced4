"""The hosted API-key authorizer: a simple-response decision from the hashes in the secret."""

from __future__ import annotations

from functions.auth import key_hash
from functions.authorizer import make_handler

SECRET = {"api_keys": {"ci": {"sha256": key_hash("cmk_good"), "tenant": "team-a"}, "broken": {"tenant": "no-hash"}}}


def event(authorization: str | None) -> dict:
    headers = {} if authorization is None else {"authorization": authorization}
    return {
        "version": "2.0",
        "type": "REQUEST",
        "headers": headers,
        "identitySource": [authorization] if authorization else [],
    }


def test_a_known_key_is_authorized_with_its_tenant(monkeypatch):
    monkeypatch.setenv("CAPSULE_SECRET_ARN", "arn:secret")
    asked = []
    handler = make_handler(lambda arn: asked.append(arn) or SECRET)
    assert handler(event("Bearer cmk_good"), None) == {
        "isAuthorized": True,
        "context": {"tenant": "team-a", "key": "ci"},
    }
    assert asked == ["arn:secret"]


def test_unknown_missing_or_malformed_keys_are_refused(monkeypatch):
    monkeypatch.setenv("CAPSULE_SECRET_ARN", "arn:secret")
    handler = make_handler(lambda arn: SECRET)
    for value in ("Bearer cmk_bad", None, "Basic abc", "Bearer ", "cmk_good"):
        assert handler(event(value), None) == {"isAuthorized": False}, value
    assert make_handler(lambda arn: {})(event("Bearer cmk_good"), None) == {"isAuthorized": False}


def test_a_scoped_key_passes_its_scope_on_as_json_text(monkeypatch):
    import json

    from functions.scopes import caller_reach

    monkeypatch.setenv("CAPSULE_SECRET_ARN", "arn:secret")
    scoped = {
        "api_keys": {
            "bot": {
                "sha256": key_hash("cmk_bot"),
                "tenant": "team-a",
                "scope": {"access": "read", "projects": ["acme/*"]},
            }
        }
    }
    decided = make_handler(lambda arn: scoped)(event("Bearer cmk_bot"), None)
    context = decided["context"]
    assert decided["isAuthorized"] and json.loads(context["scope"]) == {"access": "read", "projects": ["acme/*"]}
    reach = caller_reach({"requestContext": {"authorizer": {"lambda": context}}}, lambda: [])
    assert reach.access == "read" and reach.projects == ("acme/*",) and reach.who == "API key 'bot'"
