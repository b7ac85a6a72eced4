"""SigV4-signed requests (botocore's signer, service execute-api) against ``capsule serve``."""

import json
from datetime import timedelta

import pytest

from .conftest import SIGV4_KEY, SIGV4_SECRET, SIGV4_TENANT
from .sigv4 import now, sign


def signed(server, method, path, body=None, *, secret=SIGV4_SECRET, key=SIGV4_KEY, at=None, send=None):
    data = b"" if body is None else json.dumps(body).encode()
    headers = sign(
        method, f"{server.url}{path}", data, key=key, secret=secret, at=at, headers={"Content-Type": "application/json"}
    )
    return server.request(method, path, raw=data if send is None else send, headers=headers, token=None)


def count(server, project):
    listed = signed(server, "GET", f"/v1/memories?project={project}&limit=100")
    assert listed.status == 200, listed
    return len(listed.json["memories"])


def test_signed_requests_act_as_the_configured_principal(server):
    r = signed(server, "POST", "/v1/memories", {"project": "signed", "content": "signed with SigV4"})
    assert r.status == 201, r
    mid = r.json["memory"]["id"]
    assert signed(server, "GET", "/v1/health").json["tenant"] == SIGV4_TENANT
    assert signed(server, "GET", f"/v1/memories/{mid}").status == 200
    assert signed(server, "POST", f"/v1/memories/{mid}/feedback", {"helpful": True}).status == 200
    found = signed(server, "POST", "/v1/memories/search", {"query": "sigv4", "global": True})
    assert [h["id"] for h in found.json["results"]] == [mid]
    # the token's tenant cannot see it
    assert server.request("GET", f"/v1/memories/{mid}").status == 404


def test_tampered_body_is_refused_and_changes_nothing(server):
    before = count(server, "signed-t")
    original = {"project": "signed-t", "content": "what was signed"}
    tampered = json.dumps({"project": "signed-t", "content": "what was sent"}).encode()
    r = signed(server, "POST", "/v1/memories", original, send=tampered)
    assert r.status == 403 and r.json["error"]["code"] == "forbidden"
    assert count(server, "signed-t") == before


@pytest.mark.parametrize(
    "kwargs, status",
    [
        ({"secret": "a-wrong-secret-0123456789abcdef"}, 403),
        ({"at": now() - timedelta(minutes=10)}, 403),
        ({"key": "AKIDNOTCONFIGURED01"}, 403),
    ],
)
def test_wrong_secret_stale_date_unknown_key_are_refused(server, kwargs, status):
    before = count(server, "signed-w")
    r = signed(server, "POST", "/v1/memories", {"project": "signed-w", "content": "must not land"}, **kwargs)
    assert r.status == status, r
    assert count(server, "signed-w") == before


def test_signed_delete_of_another_tenants_memory_is_404(server):
    mine = server.request("POST", "/v1/memories", {"project": "token-only", "content": "the token's memory"})
    mid = mine.json["memory"]["id"]
    assert signed(server, "DELETE", f"/v1/memories/{mid}").status == 404
    assert server.request("GET", f"/v1/memories/{mid}").status == 200
