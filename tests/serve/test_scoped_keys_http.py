"""Scoped API keys and principal scopes against a live ``capsule serve`` (real HTTP on loopback,
keys made with the ``capsule keys`` command while the server runs, SigV4 signed by botocore)."""

import json

import pytest

from .conftest import SIGV4_KEY, SIGV4_SECRET, SIGV4_TENANT
from .server import Server, capsule
from .sigv4 import sign


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("scoped")
    added = capsule(
        "keys", "add-sigv4", SIGV4_KEY, "--tenant", SIGV4_TENANT, data_dir=data_dir, stdin=SIGV4_SECRET + "\n"
    )
    assert added.returncode == 0, added.stderr
    srv = Server(data_dir)
    yield srv
    assert srv.stop() == 0


def new_key(server, name, *options):
    made = capsule("keys", "create", name, "--json", *options, data_dir=server.data_dir)
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout)["key"]


def as_key(server, key, method, path, body=None):
    return server.request(method, path, body, headers={"Authorization": f"Bearer {key}"}, token=None)


def signed(server, method, path, body=None):
    data = b"" if body is None else json.dumps(body).encode()
    headers = sign(
        method,
        f"{server.url}{path}",
        data,
        key=SIGV4_KEY,
        secret=SIGV4_SECRET,
        headers={"Content-Type": "application/json"},
    )
    return server.request(method, path, raw=data, headers=headers, token=None)


def test_a_read_only_project_key_reaches_only_its_projects(live):
    for project in ("acme/api", "payroll"):
        r = live.request("POST", "/v1/memories", {"project": project, "content": f"deploy notes for {project}"})
        assert r.status == 201, r
    reader = new_key(live, "reader", "--read-only", "--project", "acme/*")
    assert as_key(live, reader, "GET", "/v1/memories?project=acme/api").status == 200
    refused = as_key(live, reader, "GET", "/v1/memories?project=payroll")
    assert refused.status == 403 and refused.json["error"]["details"][0]["field"] == "project"
    write = as_key(live, reader, "POST", "/v1/memories", {"project": "acme/api", "content": "new"})
    assert write.status == 403 and write.json["error"]["details"][0]["missing"] == "write"
    found = as_key(live, reader, "POST", "/v1/memories/search", {"query": "deploy notes", "global": True})
    assert found.status == 200 and {h["project"] for h in found.json["results"]} == {"acme/api"}
    me = as_key(live, reader, "GET", "/v1/scopes/me").json
    assert me["scope"] == {"access": "read", "projects": ["acme/*"], "subjects": None, "sees": "private"}
    assert live.request("GET", "/v1/scopes/me").json["scope"]["access"] == "admin"  # the token: full access


def test_a_public_key_sees_public_memories_only(live):
    live.request("POST", "/v1/memories", {"project": "site", "content": "opening hours 9 to 5", "visibility": "public"})
    live.request("POST", "/v1/memories", {"project": "site", "content": "staff rota is private"})
    bot = new_key(live, "site-bot", "--read-only", "--sees", "public")
    listed = as_key(live, bot, "GET", "/v1/memories?project=site")
    assert [m["content"] for m in listed.json["memories"]] == ["opening hours 9 to 5"]


def test_principal_scopes_limit_a_sigv4_principal(live):
    admin = new_key(live, "signer-admin", "--tenant", SIGV4_TENANT)
    assert signed(live, "POST", "/v1/memories", {"project": "s", "content": "before the rules"}).status == 201
    rules = {"rules": [{"principal": SIGV4_TENANT, "scope": {"access": "read"}}]}
    assert as_key(live, admin, "PUT", "/v1/scopes/principals", rules).status == 200
    refused = signed(live, "POST", "/v1/memories", {"project": "s", "content": "after the rules"})
    assert refused.status == 403 and refused.json["error"]["details"][0]["missing"] == "write"
    assert signed(live, "GET", "/v1/memories?project=s").status == 200
    assert signed(live, "PUT", "/v1/scopes/principals", {"rules": []}).status == 403  # read-only now
    assert as_key(live, admin, "PUT", "/v1/scopes/principals", {"rules": []}).status == 200
    assert signed(live, "POST", "/v1/memories", {"project": "s", "content": "rules gone"}).status == 201


def test_a_principal_cannot_lock_itself_out(live):
    r = signed(
        live, "PUT", "/v1/scopes/principals", {"rules": [{"principal": "arn:aws:iam::*", "scope": {"access": "write"}}]}
    )
    assert r.status == 409 and r.json["error"]["details"][0]["field"] == "rules"
