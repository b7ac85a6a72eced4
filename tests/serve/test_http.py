"""The API over real HTTP on loopback, against a ``capsule serve`` process."""

import json
import stat
import time
from concurrent.futures import ThreadPoolExecutor

from capsule.core import limits

from .server import capsule


def test_banner_names_console_openapi_and_the_token_once(server):
    banner = "".join(server.stdout)
    assert f"{server.url}/ui" in banner and f"{server.url}/openapi.json" in banner
    assert server.token in banner
    assert stat.S_IMODE((server.data_dir / "gateway-token").stat().st_mode) == 0o600


def test_full_flow_with_the_token(server):
    r = server.request("POST", "/v1/memories", {"project": "web", "content": "Use WAL mode for SQLite readers"})
    assert r.status == 201, r
    mid = r.json["memory"]["id"]
    assert r.headers["x-request-id"]
    assert server.request("GET", f"/v1/memories/{mid}").json["memory"]["id"] == mid
    found = server.request("POST", "/v1/memories/search", {"query": "sqlite readers", "project": "web"})
    assert found.json["results"][0]["id"] == mid
    assert server.request("POST", f"/v1/memories/{mid}/pin").json["memory"]["pinned"] is True
    assert server.request("GET", "/v1/memories?project=web&pinned_only=true").json["memories"][0]["id"] == mid
    assert server.request("POST", f"/v1/memories/{mid}/unpin").status == 200
    assert server.request("POST", f"/v1/memories/{mid}/feedback", {"helpful": True}).json["memory"]["helpful"] == 1
    assert server.request("DELETE", f"/v1/memories/{mid}?reason=test").status == 200
    assert server.request("GET", f"/v1/memories/{mid}").status == 404
    assert server.request("POST", f"/v1/memories/{mid}/restore").status == 200
    names = [p["project"] for p in server.request("GET", "/v1/projects").json["projects"]]
    assert "web" in names
    assert server.request("GET", "/v1/health").json["tenant"] == "local"


def test_the_cli_and_the_server_share_the_local_tenant(server):
    stored = capsule("store", "written by the command line", "--project", "shared", "--json", data_dir=server.data_dir)
    assert stored.returncode == 0, stored.stderr
    mid = json.loads(stored.stdout)["memory"]["id"]
    assert server.request("GET", f"/v1/memories/{mid}").status == 200


def test_openapi_is_public_and_complete(server):
    r = server.request("GET", "/openapi.json", token=None)
    assert r.status == 200 and "/v1/memories/search" in r.json["paths"]


def test_missing_and_bad_credentials_are_401(server):
    assert server.request("GET", "/v1/projects", token=None).status == 401
    r = server.request("GET", "/v1/projects", token="not-the-token")
    assert r.status == 401 and r.json["error"]["code"] == "unauthorized"
    r = server.request("POST", "/v1/memories", {"project": "x", "content": "no"}, token=None)
    assert r.status == 401
    assert all(p["project"] != "x" for p in server.request("GET", "/v1/projects").json["projects"])


def test_errors_over_http(server):
    r = server.request("POST", "/v1/memories", raw=b'{"project": "p", "content": ')
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "body"
    r = server.request("POST", "/v1/memories", {"project": "p"})
    assert r.status == 422 and r.json["error"]["details"][0]["field"] == "content"
    r = server.request("GET", "/v1/memories/does-not-exist")
    assert r.status == 404
    r = server.request("GET", "/v1/nothing")
    assert r.status == 404
    big = json.dumps({"project": "big", "text": "x" * (limits.MAX_BODY_BYTES + 10)}).encode()
    r = server.request("POST", "/v1/memories/ingest", raw=big)
    assert r.status == 413 and r.json["error"]["code"] == "payload_too_large"
    assert all(p["project"] != "big" for p in server.request("GET", "/v1/projects").json["projects"])
    assert b"Traceback" not in r.body


def test_named_api_keys_create_use_revoke(server):
    made = capsule("keys", "create", "ci-bot", "--tenant", "team-ci", "--json", data_dir=server.data_dir)
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)["key"]
    assert key not in (server.data_dir / "api-keys.json").read_text()
    r = server.request("POST", "/v1/memories", {"project": "ci", "content": "team memory"}, token=key)
    assert r.status == 201
    mid = r.json["memory"]["id"]
    assert server.request("GET", f"/v1/memories/{mid}", headers={"X-Api-Key": key}, token=None).status == 200
    assert server.request("GET", f"/v1/memories/{mid}").status == 404  # the token is tenant 'local'
    listed = capsule("keys", "list", "--json", data_dir=server.data_dir)
    assert [k["name"] for k in json.loads(listed.stdout)["api_keys"]] == ["ci-bot"]
    assert capsule("keys", "revoke", "ci-bot", data_dir=server.data_dir).returncode == 0
    assert server.request("GET", f"/v1/memories/{mid}", token=key).status == 401


def test_concurrent_requests(server):
    def store(i):
        return server.request("POST", "/v1/memories", {"project": "burst", "content": f"concurrent memory {i}"})

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(store, range(40)))
    assert [r.status for r in replies] == [201] * 40
    listed = server.request("GET", "/v1/memories?project=burst&limit=100").json["memories"]
    assert len(listed) == 40


def test_console_route_is_served_without_auth(server):
    r = server.request("GET", "/ui", token=None)
    assert r.status in (200, 404)  # 404 only while the console is not installed
    if r.status == 200:
        assert r.headers["Content-Type"].startswith("text/html")
    assert server.request("GET", "/ui/../../pyproject.toml", token=None).status == 404


def test_one_log_line_per_request(server):
    before = len([line for line in server.stderr if '"GET /v1/health"' in line])
    server.request("GET", "/v1/health")
    server.request("GET", "/v1/health")
    for _ in range(50):
        lines = [line for line in server.stderr if '"GET /v1/health"' in line]
        if len(lines) >= before + 2:
            break
        time.sleep(0.1)
    assert len(lines) == before + 2
    assert " 200 " in lines[-1] and "tenant=local" in lines[-1]
