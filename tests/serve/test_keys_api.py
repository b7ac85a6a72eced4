"""GET/POST /v1/keys and DELETE /v1/keys/{name}: the gateway's API keys over HTTP (functions.keys_api),
through functions.gateway without sockets, with real credential files in a temp folder."""

import json

import pytest

from functions.auth import HttpRequest
from tests.support.gateway import own_gateway


@pytest.fixture
def gateway(tmp_path):
    return own_gateway(tmp_path)


def call(gateway, method, path, body=None, secret=None):
    secret = secret or gateway.credentials.token_path.read_text().strip()
    data = json.dumps(body).encode() if isinstance(body, dict) else (body or b"")
    request = HttpRequest(
        method, path, "", [("Authorization", f"Bearer {secret}"), ("Content-Type", "application/json")], data
    )
    reply = gateway.handle(request, "127.0.0.1")
    return reply.status, json.loads(reply.body)


def test_create_list_and_revoke_a_key_and_the_key_works_until_revoked(gateway):
    status, made = call(gateway, "POST", "/v1/keys", {"name": "ci-bot", "tenant": "team-a"})
    assert status == 201 and made["name"] == "ci-bot" and made["tenant"] == "team-a"
    assert made["key"].startswith("cmk_") and made["created_at"]
    status, listed = call(gateway, "GET", "/v1/keys")
    assert status == 200 and [k["name"] for k in listed["keys"]] == ["ci-bot"]
    assert made["key"] not in json.dumps(listed)  # shown once, never listed
    assert gateway.credentials.list_keys()[0]["tenant"] == "team-a"  # the same file capsule keys reads

    status, _ = call(gateway, "GET", "/v1/keys", secret=made["key"])
    assert status == 403  # a named key cannot manage keys
    status, gone = call(gateway, "DELETE", "/v1/keys/ci-bot")
    assert status == 200 and gone["revoked"] == "ci-bot"
    assert gateway.credentials.list_keys() == []
    assert call(gateway, "GET", "/v1/keys", secret=made["key"])[0] == 401


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": "ok", "tenat": "x"}, "tenat"),
        ({"name": 7}, "name"),
        ({}, "name"),
        ({"name": "bad name!"}, "name"),
        ({"name": "ok", "tenant": ["x"]}, "tenant"),
    ],
)
def test_a_bad_create_is_refused_naming_the_field_and_makes_no_key(gateway, body, field):
    status, answer = call(gateway, "POST", "/v1/keys", body)
    assert status == 422, answer
    assert [d["field"] for d in answer["error"]["details"]] == [field]
    assert gateway.credentials.list_keys() == []


def test_unknown_field_names_the_nearest_known_one(gateway):
    _, answer = call(gateway, "POST", "/v1/keys", {"name": "ok", "tenat": "x"})
    assert "did you mean 'tenant'" in answer["error"]["message"]


def test_refusals_not_json_twice_wrong_method_no_token_unknown_key(gateway):
    assert call(gateway, "POST", "/v1/keys", b"name=x")[0] == 400
    assert call(gateway, "POST", "/v1/keys", b"[1]")[0] == 422
    assert call(gateway, "POST", "/v1/keys", b"{" + b" " * 5000 + b"}")[0] == 413
    assert call(gateway, "POST", "/v1/keys", {"name": "twice"})[0] == 201
    assert call(gateway, "POST", "/v1/keys", {"name": "twice"})[0] == 409
    assert call(gateway, "DELETE", "/v1/keys/never-made")[0] == 404
    assert call(gateway, "PUT", "/v1/keys")[0] == 405
    assert call(gateway, "GET", "/v1/keys/twice")[0] == 405
    assert call(gateway, "GET", "/v1/keys", secret="wrong")[0] == 401
    assert [k["name"] for k in gateway.credentials.list_keys()] == ["twice"]
