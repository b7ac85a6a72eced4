"""The first Capsule's settings work alone: the server's ``VOYAGE_API_KEY`` turns Voyage on, and
the bridge's ``CAPSULE_MEMORY_URL`` finds the token of the ``capsule serve`` on this machine
(without one every call says what to set). A real ``capsule serve`` on loopback, driven by the
MCP SDK's stdio client; Voyage is the stand-in HTTP server of tests/support/fake_provider.py on
loopback, which the server reaches through its real transport (``VOYAGE_BASE_URL``)."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_support import ROOT, ToolSession, capsule_command

from tests.support.fake_provider import FakeProvider

VOYAGE_KEY = "pa-test-key"
# the machine's settings a user of the first Capsule would not have (the proxies: loopback only)
NOT_THEIRS = (
    "PYTHONPATH",
    "HOME",
    "VOYAGE_API_KEY",
    "OPENAI_API_KEY",
    "VOYAGE_BASE_URL",
    "VOYAGE_API_BASE",
    "OPENAI_BASE_URL",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
)
TOOLS_WITHOUT_ARGS = ["memory_projects", "memory_list", "golden_paths", "detect_patterns"]


def bare_env(home: Path, **extra: str) -> dict[str, str]:
    """What a user of the first Capsule has: a HOME, and nothing of ours but what ``extra`` sets."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CAPSULE_")) and k.upper() not in NOT_THEIRS
    }
    env.update(
        {
            "HOME": str(home),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT)]),
            "AWS_CONFIG_FILE": str(home / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-aws-credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def voyage():
    with FakeProvider("voyage", VOYAGE_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def serve(tmp_path_factory, voyage):
    """``capsule serve`` as a user of the first Capsule starts it: no options, VOYAGE_API_KEY set,
    its data in ~/.capsule of a temp HOME; Voyage's API at the stand-in's address."""
    home = tmp_path_factory.mktemp("home")
    env = bare_env(home, VOYAGE_API_KEY=VOYAGE_KEY, VOYAGE_BASE_URL=voyage.url)
    process = subprocess.Popen(
        capsule_command("serve", "--port", "0", "--workers", "1"),
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = None
        for line in process.stdout:
            if "listening on " in line:
                url = line.split("listening on ", 1)[1].split()[0]
                break
        assert url, "capsule serve did not start"
        assert (home / ".capsule" / "gateway-token").is_file()
        yield {"url": url, "home": home}
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


def run_mcp(body, env: dict[str, str]) -> None:
    async def main():
        params = StdioServerParameters(
            command=capsule_command()[0], args=[*capsule_command()[1:], "mcp"], env=env, cwd=str(ROOT)
        )
        async with Client(params) as client:
            await body(ToolSession(client))

    anyio.run(main)


def test_the_memory_url_alone_reaches_the_local_server_with_its_token(serve):
    async def body(session):
        stored, text = await session.ok(
            "memory_store", {"content": "Deploys go through the blue/green switch", "project": "app"}
        )
        assert stored["explanation"].endswith("Embedder: voyage (voyage-3.5, 1024 dimensions): VOYAGE_API_KEY is set.")
        assert stored["memory"]["model"] == "voyage-3.5" and stored["memory"]["status"] != "pending_embedding"
        found, _ = await session.ok("memory_search", {"query": "blue green deploy", "project": "app"})
        assert found["results"][0]["id"] == stored["memory"]["id"]
        projects, _ = await session.ok("memory_projects")
        assert "app" in [p["project"] for p in projects["projects"]]

    # The user's machine: the same HOME as the server, and CAPSULE_MEMORY_URL; nothing else.
    run_mcp(body, bare_env(serve["home"], CAPSULE_MEMORY_URL=serve["url"]))


def test_capsule_data_dir_names_the_servers_folder(serve, tmp_path):
    async def body(session):
        projects, _ = await session.ok("memory_projects")
        assert "app" in [p["project"] for p in projects["projects"]]

    run_mcp(body, bare_env(tmp_path, CAPSULE_MEMORY_URL=serve["url"], CAPSULE_DATA_DIR=str(serve["home"] / ".capsule")))


def test_without_a_credential_every_call_says_what_to_set(serve, tmp_path):
    async def body(session):
        calls = [(name, {}) for name in TOOLS_WITHOUT_ARGS] + [
            ("memory_store", {"content": "x"}),
            ("memory_search", {"query": "deploy"}),
            ("solution_search", {"error": "ECONNREFUSED"}),
        ]
        for name, arguments in calls:
            structured, text, is_error = await session.call(name, arguments)
            assert is_error and structured is None, name
            assert "unauthorized: no credentials for " + serve["url"] + ": set" in text, (name, text)
            assert "set CAPSULE_API_KEY" in text and "gateway-token" in text and "CAPSULE_DATA_DIR" in text, text

    # Another HOME: no token file to find, no key set.
    run_mcp(body, bare_env(tmp_path, CAPSULE_MEMORY_URL=serve["url"]))


def test_auth_still_overrides_the_url(serve):
    async def body(session):
        structured, text, is_error = await session.call("memory_projects")
        assert is_error and "unauthorized" in text and "HTTP 401" in text and "sent no credentials" in text

    run_mcp(body, bare_env(serve["home"], CAPSULE_MEMORY_URL=serve["url"], CAPSULE_AUTH="none"))


def test_a_wrong_api_key_wins_over_the_token_and_is_named(serve):
    async def body(session):
        structured, text, is_error = await session.call("memory_projects")
        assert is_error and "HTTP 401" in text and "sent the API key in CAPSULE_API_KEY" in text
        assert "cmk_not_a_key" not in text

    run_mcp(body, bare_env(serve["home"], CAPSULE_MEMORY_URL=serve["url"], CAPSULE_API_KEY="cmk_not_a_key"))


def test_health_says_the_voyage_key_turned_voyage_on(serve, voyage):
    token = (serve["home"] / ".capsule" / "gateway-token").read_text().strip()

    def call(method: str, path: str, body=None):
        request = urllib.request.Request(
            serve["url"] + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as reply:
            return json.loads(reply.read())

    health = call("GET", "/v1/health")
    assert health["embedder"] == {
        "name": "voyage",
        "model": "voyage-3.5",
        "dims": 1024,
        "reason": "VOYAGE_API_KEY is set",
    }
    assert "Embedder: voyage (voyage-3.5, 1024 dimensions)" in health["explanation"]
    call("POST", "/v1/memories", {"project": "health", "content": "Voyage made this vector"})
    call("POST", "/v1/memories/search", {"project": "health", "query": "who made this vector"})
    calls = voyage.calls
    assert {c["body"]["model"] for c in calls} == {"voyage-3.5"}
    assert {c["body"]["input_type"] for c in calls} >= {"document", "query"}
    assert {(c["path"], c["auth"], c["status"]) for c in calls} == {("/v1/embeddings", f"Bearer {VOYAGE_KEY}", 200)}


def test_a_missing_embedder_key_in_embedded_mode_is_the_reason_of_every_call(tmp_path):
    async def body(session):
        for name in TOOLS_WITHOUT_ARGS + ["memory_search"]:
            structured, text, is_error = await session.call(name, {"query": "x"} if name == "memory_search" else {})
            assert is_error and "CAPSULE_EMBEDDER=voyage needs VOYAGE_API_KEY" in text, (name, text)

    run_mcp(body, bare_env(tmp_path, CAPSULE_EMBEDDER="voyage", CAPSULE_DATA_DIR=str(tmp_path / "data")))


def test_a_base_url_that_is_not_http_is_named_by_every_call(tmp_path):
    async def body(session):
        for name in ["memory_projects", "memory_search"]:
            structured, text, is_error = await session.call(name, {"query": "x"} if name == "memory_search" else {})
            assert is_error and "VOYAGE_BASE_URL must be an http:// or https:// URL with a host" in text, (name, text)

    run_mcp(
        body,
        bare_env(
            tmp_path,
            VOYAGE_API_KEY=VOYAGE_KEY,
            VOYAGE_API_BASE="ftp://127.0.0.1/v1",
            CAPSULE_DATA_DIR=str(tmp_path / "data"),
        ),
    )
