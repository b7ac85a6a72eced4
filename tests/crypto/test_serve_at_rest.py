"""Encryption at rest through a live ``capsule serve`` (a real process on loopback, two workers):
flagged memories never reach the SQLite file, its WAL or the snapshot folder in the clear, and
come back whole over HTTP; a tenant's own key (``X-Capsule-BYOK``) is needed for every request
that reads its sealed memories, and a missing or wrong one is a 403 naming the key, never a 500."""

from __future__ import annotations

import base64
import os

import pytest

from tests.serve.server import Server

from .disk import files_holding, rows_holding

pytestmark = pytest.mark.slow

FLAGGED = "Ring ottoline.brackenfurze@quillmoor.io about the marmalisk contract renewal"
WORDS = [b"ottoline", b"brackenfurze", b"quillmoor", b"marmalisk", b"Fennimorevia"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("sealed-serve")
    srv = Server(data_dir)
    yield srv
    assert srv.stop() == 0, "".join(srv.stderr)


def test_flagged_memories_are_sealed_on_disk_and_whole_over_http(server):
    r = server.request(
        "POST", "/v1/memories", {"project": "crm", "content": FLAGGED, "meta": {"client": "Fennimorevia Ltd"}}
    )
    assert r.status == 201, r
    mid = r.json["memory"]["id"]
    assert server.request("GET", f"/v1/memories/{mid}").json["memory"]["content"] == FLAGGED
    for mode in ("vector", "bm25", "hybrid"):
        found = server.request(
            "POST", "/v1/memories/search", {"query": "marmalisk renewal", "project": "crm", "mode": mode}
        )
        assert found.status == 200 and found.json["results"][0]["id"] == mid, (mode, found)
        assert found.json["results"][0]["content"] == FLAGGED
    patched = server.request("PATCH", f"/v1/memories/{mid}", {"content": FLAGGED + " (signed)"})
    assert patched.status == 200, patched
    history = server.request("GET", f"/v1/memories/{mid}/history").json
    assert [v["content"] for v in history["versions"]] == [FLAGGED, FLAGGED + " (signed)"]

    assert files_holding(server.data_dir, WORDS) == {}
    assert rows_holding(server.data_dir / "capsule.db", [w.decode() for w in WORDS]) == []


def test_a_project_set_to_encrypt_everything_over_http(server):
    r = server.request("PUT", "/v1/projects/settings", {"project": "vault", "encryption": "all"})
    assert r.status == 200, r
    assert "encrypts every memory" in r.json["explanation"]
    bad = server.request("PUT", "/v1/projects/settings", {"project": "vault", "encryption": "some"})
    assert bad.status == 422 and "encryption" in bad.body.decode()
    stored = server.request("POST", "/v1/memories", {"project": "vault", "content": "the pelicanthrope rota"})
    assert stored.status == 201
    found = server.request(
        "POST", "/v1/memories/search", {"query": "pelicanthrope", "project": "vault", "mode": "bm25"}
    )
    assert found.json["results"][0]["content"] == "the pelicanthrope rota"
    assert files_holding(server.data_dir, [b"pelicanthrope"]) == {}


def key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def test_a_tenant_that_brings_its_own_key_must_send_it(tmp_path):
    srv = Server(tmp_path)
    try:
        own, other = {"X-Capsule-BYOK": key()}, {"X-Capsule-BYOK": key()}
        r = srv.request("POST", "/v1/memories", {"project": "p", "content": FLAGGED}, headers=own)
        assert r.status == 201, r
        mid = r.json["memory"]["id"]
        assert srv.request("GET", f"/v1/memories/{mid}", headers=own).json["memory"]["content"] == FLAGGED

        missing = srv.request("GET", f"/v1/memories/{mid}")
        assert missing.status == 403 and missing.json["error"]["code"] == "key_refused", missing
        assert "X-Capsule-BYOK" in missing.json["error"]["message"]
        wrong = srv.request("GET", f"/v1/memories/{mid}", headers=other)
        assert wrong.status == 403 and "is not the one" in wrong.json["error"]["message"], wrong
        malformed = srv.request("GET", f"/v1/memories/{mid}", headers={"X-Capsule-BYOK": "short"})
        assert malformed.status == 422 and "X-Capsule-BYOK" in malformed.body.decode()
        # A warm index holds the opened memory: a search without the key is still refused.
        query = {"query": "marmalisk", "project": "p", "mode": "bm25"}
        assert srv.request("POST", "/v1/memories/search", query, headers=own).json["results"][0]["id"] == mid
        refused = srv.request("POST", "/v1/memories/search", query)
        assert refused.status == 403 and refused.json["error"]["code"] == "key_refused"
        for reply in (missing, wrong, refused):
            assert b"marmalisk" not in reply.body
        assert files_holding(tmp_path, WORDS) == {}
    finally:
        assert srv.stop() == 0, "".join(srv.stderr)


def test_the_hosted_rotation_route_rotates_the_callers_key_without_downtime(server):
    r = server.request("POST", "/v1/memories", {"project": "rot", "content": FLAGGED + " rot"})
    mid = r.json["memory"]["id"]
    unknown = server.request("POST", "/v1/keys/rotate", {"reasn": "typo"})
    assert unknown.status == 422 and "reason" in unknown.body.decode()
    rotated = server.request("POST", "/v1/keys/rotate", {"reason": "quarterly"})
    assert rotated.status == 200, rotated
    assert rotated.json["version"] >= 2 and rotated.json["wrapped_by"].startswith("local:")
    assert server.request("GET", f"/v1/memories/{mid}").json["memory"]["content"] == FLAGGED + " rot"
    found = server.request("POST", "/v1/memories/search", {"query": "marmalisk", "project": "rot", "mode": "bm25"})
    assert found.json["results"][0]["id"] == mid
