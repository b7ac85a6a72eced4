"""``capsule mcp --embedded`` fed the Vector Bridge hooks' exact byte sequences (COMPAT.md §3.1).

Each hook writes its requests to a fresh server process, closes stdin at once and waits for the
process to exit; the answers must all be on stdout by then, and stdout must hold JSON-RPC lines
only. The requests here are our own copies of what the hooks send, byte for byte: Python's
``json.dumps`` (", " and ": " separators), ``\\n`` after each line except ``memory_client.py``'s.
The tools' answer bodies belong to another contract (their own tests): here only that each request
has one answer with its id, and that the memory a call stored is there.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from mcp_support import capsule_command, capsule_env, new_data_dir

pytestmark = pytest.mark.slow

PROJECT_ROOT = "/Users/me/my-app"


def ingest_call(request_id: int, text: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": "memory_ingest",
            "arguments": {"project_root": PROJECT_ROOT, "path": f"notes/{request_id}.md", "text": text, "meta": {}},
        },
    }


def initialize(protocol: str, client: str, version: str = "1.0.0") -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": protocol, "capabilities": {}, "clientInfo": {"name": client, "version": version}},
    }


def lines(*messages: dict) -> bytes:
    """Each message on its own line, ``\\n`` after every one (the hooks that send a handshake)."""
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def exchange(tmp_path, sent: bytes) -> subprocess.CompletedProcess:
    """One server process: ``sent`` written, stdin closed at once, the process waited for."""
    done = subprocess.run(
        capsule_command("mcp", "--embedded"),
        input=sent,
        capture_output=True,
        env=capsule_env(new_data_dir(tmp_path)),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done


def answers(done: subprocess.CompletedProcess) -> dict:
    """Every stdout line is a JSON-RPC message (no logs there); the answers by id, each once."""
    by_id: dict = {}
    for line in done.stdout.decode().splitlines():
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0" and "method" not in message, line
        assert message["id"] not in by_id, f"answered twice: {line}"
        by_id[message["id"]] = message
    return by_id


def stored_memories(tmp_path) -> int:
    """How many memories the data folder holds, whatever project the calls landed in."""
    done = subprocess.run(
        capsule_command("projects", "--json"),
        capture_output=True,
        text=True,
        env=capsule_env(new_data_dir(tmp_path)),
        timeout=120,
        check=True,
    )
    return sum(project["memories"] for project in json.loads(done.stdout)["projects"])


def test_memory_client_bare_call_without_newline_is_answered_as_one_json_document(tmp_path):
    # memory_client.py: no initialize, id 1, no trailing newline, stdin closed; it parses the WHOLE
    # stdout as one JSON document and reads result.content[0].text.
    sent = json.dumps(ingest_call(1, "Decision: the queue retries six times, then dead-letters."))
    done = exchange(tmp_path, sent.encode())

    document = json.loads(done.stdout)  # one document: the implicit handshake's answer is not written
    assert document["id"] == 1 and "error" not in document
    assert isinstance(document["result"]["content"][0]["text"], str)
    assert stored_memories(tmp_path) >= 1


def test_stop_digest_handshake_then_call_both_answered_before_exit(tmp_path):
    # stop_digest.py: initialize (2024-11-05, stop-digest-hook 1.0.0) id 1, tools/call id 2, stdin closed.
    sent = lines(
        initialize("2024-11-05", "stop-digest-hook"),
        ingest_call(2, "DIGEST from the implementation engineer: chose SQLite WAL for the spool."),
    )
    got = answers(exchange(tmp_path, sent))

    assert set(got) == {1, 2}
    assert got[1]["result"]["protocolVersion"] == "2024-11-05"  # a supported version is echoed
    assert "result" in got[2]
    assert stored_memories(tmp_path) >= 1


def test_hooks_asking_for_protocol_0_1_0_get_the_servers_latest(tmp_path):
    # memory_context_inject.py and conversation_summary_ingest.py: initialize with protocol 0.1.0,
    # never notifications/initialized; the context hook then searches with k 2.
    search = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "memory_search",
            "arguments": {
                "project_root": PROJECT_ROOT,
                "query": "which database does the spool use",
                "k": 2,
                "global": False,
            },
        },
    }
    got = answers(exchange(tmp_path, lines(initialize("0.1.0", "memory-context-inject"), search)))

    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    assert set(got) == {1, 2}
    assert got[1]["result"]["protocolVersion"] == HANDSHAKE_PROTOCOL_VERSIONS[-1]
    assert "result" in got[2]


def test_pipelined_calls_are_all_answered_and_stored(tmp_path):
    texts = [
        f"Finding {n}: the {word} module owns its own retries."
        for n, word in enumerate(["billing", "search", "upload", "export", "mailer"], start=2)
    ]
    sent = lines(
        initialize("2024-11-05", "stop-digest-hook"),
        *(ingest_call(n, text) for n, text in enumerate(texts, start=2)),
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "memory_projects", "arguments": {}}},
    )
    got = answers(exchange(tmp_path, sent))

    assert set(got) == set(range(1, 9))
    assert all("result" in got[n] for n in range(1, 9))
    assert stored_memories(tmp_path) >= len(texts)


def test_bare_calls_pipelined_without_handshake_last_line_unterminated(tmp_path):
    first = json.dumps(ingest_call(1, "Convention: branch names start with the ticket id.")).encode()
    second = json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_projects", "arguments": {}}}
    ).encode()
    got = answers(exchange(tmp_path, first + b"\n" + second))

    assert set(got) == {1, 2} and all("result" in m for m in got.values())


def test_malformed_lines_get_json_rpc_errors_and_the_rest_is_served(tmp_path):
    sent = (
        b"this is not JSON\n"
        + b'{"id": 5, "params": {}}\n'  # JSON, not JSON-RPC
        + b"\n"  # blank lines are skipped, not answered
        + json.dumps(
            {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "memory_projects", "arguments": {}}}
        ).encode()
    )
    done = exchange(tmp_path, sent)
    messages = [json.loads(line) for line in done.stdout.decode().splitlines()]

    assert len(messages) == 3
    parse_error = next(m for m in messages if m["id"] is None)
    assert parse_error["error"]["code"] == -32700
    invalid = next(m for m in messages if m["id"] == 5)
    assert invalid["error"]["code"] == -32600
    assert "result" in next(m for m in messages if m["id"] == 6)


def test_an_unknown_method_still_gets_its_error_before_exit(tmp_path):
    sent = lines({"jsonrpc": "2.0", "id": 1, "method": "no/such/method"})
    got = answers(exchange(tmp_path, sent))

    assert got[1]["error"]["code"] == -32601


def test_output_printed_while_serving_goes_to_stderr_not_the_wire(tmp_path):
    # Anything written to file descriptor 1 once the server is starting (a library's print, a
    # tool's child process) lands on stderr: memory_client.py reads the whole stdout as one document.
    noisy = (
        "import sys, mcp_client.mcp_server as m\n"
        "built = m.build_server\n"
        "def build(*a):\n"
        "    print('noise from a library'); sys.stdout.flush()\n"
        "    import os; os.system('echo noise from a child process')\n"
        "    return built(*a)\n"
        "m.build_server = build\n"
        "from capsule_cli.cli import main\n"
        "sys.exit(main(['mcp', '--embedded']))\n"
    )
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_projects", "arguments": {}}}
    done = subprocess.run(
        capsule_command()[:1] + ["-c", noisy],
        input=json.dumps(call).encode(),
        capture_output=True,
        env=capsule_env(new_data_dir(tmp_path)),
        timeout=120,
    )

    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert json.loads(done.stdout)["id"] == 1
    assert b"noise from a library" in done.stderr and b"noise from a child process" in done.stderr
