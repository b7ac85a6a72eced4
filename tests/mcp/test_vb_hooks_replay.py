"""The Vector Bridge's hooks, as COMPAT.md §3 describes their exchanges, against Capsule Memory launched
the way they launch the Vector Bridge: ``node ~/.claude/mcp-servers/vector-bridge/dist/index.js``, written
by ``capsule install vector-bridge``. Each replays a hook's bytes (handshake, framing, stdin closed at
once), reads back what that hook reads, and judges success as that hook judges it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp_support import capsule_command, capsule_env, new_data_dir

from tests.conftest import not_installed

NODE = shutil.which("node")
PROJECT = "/Users/me/my-app"
DIGEST_TEXT = (
    "Session Summary: IE agent completed task 'auth-fix'\n\nProblem: login loops after a password change\n"
    "Solution: reset the token cache on password change\nOutcome: tests pass"
)
DIGEST_META = {
    "source": "digest",
    "agent": "IE",
    "task_id": "auth-fix",
    "component": "orchestration",
    "category": "digest",
    "type": "decision",
    "stage": "implemented",
    "outcome_status": "none",
    "confidence": 0.95,
    "project_root": PROJECT,
    "project_name": "my-app",
    "project_id_hash": "0123456789abcdef",
    "status": "valid",
}

if NODE is None:
    not_installed("node is not on PATH (the Vector Bridge's hooks launch the server with it)", module=True)


@pytest.fixture
def shim(tmp_path) -> tuple[list[str], dict[str, str]]:
    data_dir = new_data_dir(tmp_path)
    env = capsule_env(data_dir, HOME=str(tmp_path / "home"))
    subprocess.run(
        capsule_command("install", "vector-bridge", "--home", str(tmp_path / "home")),
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    script = tmp_path / "home" / ".claude" / "mcp-servers" / "vector-bridge" / "dist" / "index.js"
    assert script.exists()
    return [NODE, str(script)], env


def exchange(launch: tuple[list[str], dict[str, str]], data: bytes, timeout: float = 60) -> tuple[str, str]:
    command, env = launch
    done = subprocess.run(command, input=data, capture_output=True, env=env, timeout=timeout)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode(), done.stderr.decode()


def line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


def initialize(version: str, client: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": client, "version": "1.0.0"}},
    }


def call(tool: str, arguments: dict, id_: int = 2) -> dict:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def result_of(stdout: str, id_: int = 2) -> dict | None:
    """As the hooks read stdout: line by line, non-JSON lines skipped, the `result` of one id."""
    for text in stdout.splitlines():
        try:
            message = json.loads(text)
        except ValueError:
            continue
        if message.get("id") == id_:
            return message.get("result")
    return None


def stop_digest_ingest(launch) -> tuple[dict | None, str]:
    data = line(initialize("2024-11-05", "stop-digest-hook")) + line(
        call(
            "memory_ingest",
            {"project_root": PROJECT, "path": "NOTES.md#digest-auth-fix", "text": DIGEST_TEXT, "meta": DIGEST_META},
        )
    )
    stdout, stderr = exchange(launch, data)
    return result_of(stdout), stderr


def test_the_stop_digest_queue_processor_sees_success_and_the_memory_is_stored(shim):
    result, stderr = stop_digest_ingest(shim)
    # Its success test: a non-empty result with no top-level error or skipped (COMPAT §3.3 step 7).
    assert result and "error" not in result and "skipped" not in result
    body = json.loads(result["content"][0]["text"])
    assert body["success"] is True and body["chunks"] == 1 and result["chunks"] == 1
    assert "Total ingestion time:" in stderr  # its timeout path looks for this (step 8)

    again, stderr = stop_digest_ingest(shim)  # the same digest twice: kept once, still a success
    assert again and "error" not in again and "All chunks were duplicates" in stderr


def test_the_context_inject_hook_finds_the_digest_at_the_result_level(shim):
    stop_digest_ingest(shim)
    data = line(initialize("0.1.0", "memory-context-inject")) + line(
        call(
            "memory_search",
            {
                "query": "login loops after a password change: reset the token cache",
                "project_root": PROJECT,
                "k": 2,
                "global": False,
            },
        )
    )
    stdout, _ = exchange(shim, data)
    result = result_of(stdout)
    # It reads success and results beside the content, keeps hits scoring 0.25 or more, shows meta.agent/task_id.
    assert result["success"] is True and result["results"]
    hit = result["results"][0]
    assert hit["score"] >= 0.25 and hit["meta"]["agent"] == "IE" and hit["meta"]["task_id"] == "auth-fix"
    assert hit["meta"]["outcome_status"] == "none" and hit["chunk"].startswith("Session Summary: IE agent")


def test_the_conversation_summary_hook_ingests_with_protocol_0_1_0(shim):
    data = line(initialize("0.1.0", "conversation-summary-ingest")) + line(
        call(
            "memory_ingest",
            {
                "project_root": PROJECT,
                "path": ".claude/logs/conversations/2026-12-03_10-00-00_UTC.md",
                "text": "Conversation Summary - 2026-12-03 10:00:00 UTC\n\nAgents Active: IE, TA\n\nKey Decisions:\n"
                "  - keep the token cache per user",
                "meta": {
                    "source": "conversation-summary",
                    "category": "decision",
                    "component": "docs",
                    "timestamp": "2026-12-03 10:00:00 UTC",
                    "agents": ["IE", "TA"],
                    "decision_count": 1,
                    "file_count": 0,
                    "has_open_questions": False,
                    "has_risks": False,
                    "outcome_status": "unknown",
                },
            },
        )
    )
    stdout, _ = exchange(shim, data)
    result = result_of(stdout)
    assert result and "error" not in result and result["chunks"] == 1  # it logs the count read here


def test_memory_client_gets_one_json_document_for_a_bare_call_without_newline(shim):
    data = json.dumps(
        call("memory_search", {"project_root": PROJECT, "query": "token cache", "k": 8, "global": False}, id_=1)
    ).encode()  # no newline, no initialize
    stdout, _ = exchange(shim, data)
    document = json.loads(stdout)  # the whole stdout is one JSON document
    body = json.loads(document["result"]["content"][0]["text"])
    assert body["success"] is True and body["results"] == [] and body["message"] == "No results found"


def test_an_existing_vector_bridge_build_is_kept_beside_the_shim(tmp_path):
    home = tmp_path / "home"
    script = home / ".claude" / "mcp-servers" / "vector-bridge" / "dist" / "index.js"
    script.parent.mkdir(parents=True)
    script.write_text("// the Vector Bridge's own build\n")
    env = capsule_env(new_data_dir(tmp_path))
    subprocess.run(
        capsule_command("install", "vector-bridge", "--home", str(home)),
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert Path(str(script) + ".vector-bridge").read_text() == "// the Vector Bridge's own build\n"
    assert "capsule-memory" in script.read_text()
