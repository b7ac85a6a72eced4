"""POST /v1/keys with ``scopes``: the key's scope set in the same call (all or nothing), listed
with every key, and enforced on the routes the key then calls."""

import pytest

from functions import scopes
from functions.auth import key_hash
from functions.credentials import Credentials

from .test_keys_api import call, gateway  # noqa: F401  (the fixture and the caller of test_keys_api)

SCOPE = {"access": "read", "projects": ["acme/*", "tools"], "subjects": ["bob"], "sees": "shared"}


def test_a_key_made_with_scopes_has_them_listed_and_in_its_file(gateway):  # noqa: F811
    status, made = call(gateway, "POST", "/v1/keys", {"name": "ci", "tenant": "team-a", "scopes": SCOPE})
    assert status == 201, made
    assert made["scope"] == SCOPE and made["key"].startswith("cmk_")
    assert "read" in made["scope_text"] and "acme/*" in made["scope_text"]
    status, listed = call(gateway, "GET", "/v1/keys")
    assert status == 200
    (key,) = listed["keys"]
    assert key["name"] == "ci" and key["scope"] == SCOPE and key["scope_text"] == made["scope_text"]
    assert Credentials(gateway.credentials.data_dir).list_keys()[0]["scope"] == SCOPE  # what capsule keys reads
    bearer = gateway.credentials.bearers()[key_hash(made["key"])]
    assert bearer.name == "ci" and bearer.tenant == "team-a"
    reach = scopes.reach_of(bearer.scope, "ci")
    assert reach.access == "read" and reach.projects == ("acme/*", "tools") and reach.subjects == ("bob",)
    assert reach.sees == "shared"


def test_a_key_without_scopes_is_listed_with_full_access(gateway):  # noqa: F811
    status, made = call(gateway, "POST", "/v1/keys", {"name": "full"})
    assert status == 201
    assert made["scope"] == {"access": "admin", "projects": None, "subjects": None, "sees": "private"}
    assert made["scope_text"] == "full"
    status, made = call(gateway, "POST", "/v1/keys", {"name": "partial", "scopes": {"access": "write"}})
    assert status == 201 and made["scope"]["access"] == "write" and made["scope_text"] == "write"
    assert [k["scope_text"] for k in call(gateway, "GET", "/v1/keys")[1]["keys"]] == ["full", "write"]


@pytest.mark.parametrize(
    "scope, field",
    [
        ({"access": "root"}, "scopes.access"),
        ({"acess": "read"}, "scopes.acess"),
        ({"projects": []}, "scopes.projects"),
        ({"projects": ["a[b"]}, "scopes.projects"),
        ({"projects": "acme/*"}, "scopes.projects"),
        ({"sees": "secret"}, "scopes.sees"),
        ({"subjects": [7]}, "scopes.subjects"),
        ("read", "scopes"),
        (None, "scopes"),
    ],
)
def test_a_bad_scope_is_a_422_naming_its_field_and_makes_no_key(gateway, scope, field):  # noqa: F811
    status, answer = call(gateway, "POST", "/v1/keys", {"name": "ci", "scopes": scope})
    assert status == 422, answer
    fields = [d["field"] for d in answer["error"]["details"]]
    assert fields and all(f.startswith(field) for f in fields), answer
    assert gateway.credentials.list_keys() == []


def test_a_key_made_without_scopes_reaches_the_whole_tenant(gateway):  # noqa: F811
    _, made = call(gateway, "POST", "/v1/keys", {"name": "owner", "scopes": {}})
    bearer = gateway.credentials.bearers()[key_hash(made["key"])]
    assert scopes.reach_of(bearer.scope, "owner").unrestricted
