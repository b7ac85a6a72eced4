"""The warm route: ``capsule store``/``search`` and the hooks ask the running ``capsule serve`` of
their data folder (a real server on loopback), load none of the heavy modules doing so, and run
embedded when no server answers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .server import ROOT, Server, environment

HEAVY = (
    "numpy",
    "pydantic",
    "onnxruntime",
    "tokenizers",
    "aws_lambda_powertools",
    "boto3",
    "botocore",
    "mcp",
    "uvicorn",
    "capsule.service.memory_service",
    "capsule.core.models",
)
FIXTURES = ROOT / "tests" / "mcp" / "fixtures"
PROJECT = "shop"  # the recorded hook inputs ran in /home/dev/shop: its folder name


def run(
    *args: str, data_dir: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``capsule ARGS`` as a user runs it, with -X importtime: stderr lists every module loaded."""
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "capsule_cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**environment(), "CAPSULE_DATA_DIR": str(data_dir), **(env or {})},
    )


def imported(done: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def heavy(done: subprocess.CompletedProcess) -> list[str]:
    loaded = imported(done)
    return [m for m in HEAVY if m in loaded]


def messages(done: subprocess.CompletedProcess) -> str:
    return "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))


def hook_input(name: str) -> str:
    text = (FIXTURES / name).read_text("utf-8")
    return text.replace("{transcript}", json.dumps(str(FIXTURES / "transcript.jsonl"))[1:-1])


def announced(srv: Server) -> Server:
    """The server once it has written serve.json: the banner comes when the socket listens, the
    announcement when the workers answer (a command run before that runs embedded)."""
    deadline = time.monotonic() + 120
    while not (srv.data_dir / "serve.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return srv


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("warm")
    srv = announced(Server(data_dir))
    yield srv
    assert srv.stop() == 0


def contents(srv: Server, project: str) -> list[str]:
    reply = srv.request("GET", f"/v1/memories?project={project}&limit=100")
    assert reply.status == 200, reply
    return [m["content"] for m in reply.json["memories"]]


def test_serve_announces_itself_in_its_data_folder(served):
    announced = json.loads((served.data_dir / "serve.json").read_text())
    assert announced["url"] == served.url and announced["pid"] == served.process.pid
    assert announced["embedder"] == "hashing" and announced["store"] == "sqlite"
    assert (served.data_dir / "serve.json").stat().st_mode & 0o777 == 0o600


def test_store_and_search_go_to_the_running_server_without_loading_the_heavy_modules(served):
    stored = run(
        "store",
        "Use BEGIN IMMEDIATE for SQLite writes",
        "--project",
        "warm",
        "--tag",
        "sqlite",
        "--json",
        data_dir=served.data_dir,
    )
    assert stored.returncode == 0, messages(stored)
    assert heavy(stored) == []  # an embedded run imports numpy and pydantic before anything else
    memory = json.loads(stored.stdout)["memory"]
    assert contents(served, "warm") == ["Use BEGIN IMMEDIATE for SQLite writes"]
    assert memory["meta"]["tags"] == ["sqlite"]

    found = run("search", "sqlite writes", "--project", "warm", data_dir=served.data_dir)
    assert found.returncode == 0, messages(found)
    assert heavy(found) == []
    assert memory["id"][:12] in found.stdout and "BEGIN IMMEDIATE" in found.stdout

    as_json = run("search", "sqlite writes", "--project", "warm", "--json", data_dir=served.data_dir)
    assert json.loads(as_json.stdout)["results"][0]["id"] == memory["id"]


# What the warm route must not load either: the standard library's HTTP client (it brings email
# and ssl), logging, the route table and the credentials module (the server announces both),
# typing and dataclasses (with inspect), and what only an embedded run or a refused option needs.
NOT_ON_THE_WARM_ROUTE = (
    "http.client",
    "ssl",
    "email.parser",
    "logging",
    "uuid",
    "platform",
    "subprocess",
    "difflib",
    "shutil",
    "typing",
    "dataclasses",
    "inspect",
    "datetime",
    "functions.routes",
    "functions.credentials",
    "functions.auth",
    "mcp_client.auth",
)
# ...and search, store and pre-tool-use neither the transcript parsers nor the secret guard
# (stop and post-compact guard what they keep in the spool).
NOT_FOR_A_QUERY = NOT_ON_THE_WARM_ROUTE + ("capsule.guard", "mcp_client.digest")


def test_the_warm_route_imports_only_what_a_loopback_request_needs(served):
    stored = run("store", "Pin the ONNX runtime version", "--project", "lean", data_dir=served.data_dir)
    found = run("search", "onnx runtime", "--project", "lean", data_dir=served.data_dir)
    lean = {"CAPSULE_PROJECT": "lean"}  # not the recorded inputs' project, which other tests count
    stop = run("hook", "stop", data_dir=served.data_dir, stdin=hook_input("stop.json"), env=lean)
    compacted = run("hook", "post-compact", data_dir=served.data_dir, stdin=hook_input("post_compact.json"), env=lean)
    pre = run(
        "hook",
        "pre-tool-use",
        "--min-score",
        "0",
        data_dir=served.data_dir,
        stdin=hook_input("pre_tool_use_task.json"),
        env=lean,
    )
    assert stored.returncode == found.returncode == 0, messages(stored) + messages(found)
    assert "Pin the ONNX runtime version" in found.stdout
    assert json.loads(pre.stdout)["hookSpecificOutput"]["additionalContext"].startswith("Relevant memories")
    assert "2 digest(s)" in messages(stop) and "error" not in messages(stop), messages(stop)
    assert "chunk(s) stored" in messages(compacted), messages(compacted)
    for done in (stored, found, pre):
        assert heavy(done) == [] and sorted(imported(done) & set(NOT_FOR_A_QUERY)) == [], messages(done)
    for done in (stop, compacted):
        assert heavy(done) == [] and sorted(imported(done) & set(NOT_ON_THE_WARM_ROUTE)) == [], messages(done)


def test_an_announcement_without_routes_or_token_file_still_reaches_the_server(served, tmp_path):
    """An older server announced only its URL, pid and settings: the route table and the
    credentials module name what it does not."""
    from mcp_client import local_server

    announced = json.loads((served.data_dir / "serve.json").read_text())
    assert announced["routes"]["search"] == ["POST", "/v1/memories/search"]
    assert announced["token_file"] == str(served.data_dir / "gateway-token")
    (tmp_path / "serve.json").write_text(
        json.dumps({k: v for k, v in announced.items() if k not in ("routes", "token_file")})
    )
    (tmp_path / "gateway-token").write_text((served.data_dir / "gateway-token").read_text())
    server = local_server.find({"CAPSULE_EMBEDDER": "hashing"}, data_dir=tmp_path)
    assert server is not None and server.routes is None
    answer = server.call("search", {"project": "warm", "query": "sqlite writes", "k": 3})
    assert isinstance(answer.results, list)


def test_a_token_file_announced_outside_the_data_folder_is_not_read(served, tmp_path):
    from mcp_client import local_server

    announced = json.loads((served.data_dir / "serve.json").read_text())
    (tmp_path / "elsewhere").write_text("a file that is not the token")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "serve.json").write_text(json.dumps({**announced, "token_file": str(tmp_path / "elsewhere")}))
    (tmp_path / "data" / "gateway-token").write_text(served.token)
    server = local_server.find({"CAPSULE_EMBEDDER": "hashing"}, data_dir=tmp_path / "data")
    assert server is not None and server.token == served.token  # the data folder's own token file


def test_the_servers_refusal_is_the_commands_error(served):
    refused = run("search", "anything", "--project", "warm", "-k", "500", data_dir=served.data_dir)
    assert refused.returncode == 1 and heavy(refused) == []
    assert "capsule: error:" in messages(refused) and "k" in messages(refused)


def test_hooks_go_to_the_running_server_without_loading_the_heavy_modules(served):
    done = run("hook", "stop", data_dir=served.data_dir, stdin=hook_input("stop.json"))
    assert done.returncode == 0 and "2 digest(s), 2 stored" in messages(done), messages(done)
    assert heavy(done) == []
    assert len(contents(served, PROJECT)) == 2
    assert list((served.data_dir / "hook-spool").glob("*")) == []  # delivered: nothing kept

    answer = run(
        "hook", "pre-tool-use", "--min-score", "0", data_dir=served.data_dir, stdin=hook_input("pre_tool_use_task.json")
    )
    assert answer.returncode == 0, messages(answer)
    assert heavy(answer) == []
    context = json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("Relevant memories")


def test_only_a_server_of_the_same_settings_is_asked(served):
    from mcp_client import local_server

    env = {"CAPSULE_EMBEDDER": "hashing"}
    assert local_server.find(env, data_dir=served.data_dir) == local_server.LocalServer(served.url, served.token)
    assert local_server.find({}, data_dir=served.data_dir, embedder="hashing") is not None
    assert local_server.find({"CAPSULE_EMBEDDER": "minilm"}, data_dir=served.data_dir) is None
    assert local_server.find(env, data_dir=served.data_dir, embedder="minilm") is None
    assert local_server.find({**env, "CAPSULE_STORE": "mongo"}, data_dir=served.data_dir) is None
    assert local_server.find({**env, "CAPSULE_SERVER": "off"}, data_dir=served.data_dir) is None
    assert local_server.find(env, data_dir=served.data_dir / "elsewhere") is None
    other = run("projects", data_dir=served.data_dir, env={"CAPSULE_EMBEDDER": "minilm"})  # another server's
    assert other.returncode == 0 and "numpy" in imported(other)


def test_without_an_answering_server_the_commands_run_embedded(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "gateway-token").write_text("not-a-server-token")
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    # announced by a live process (this one) that does not answer: the connection is refused
    (data_dir / "serve.json").write_text(
        json.dumps({"url": f"http://127.0.0.1:{port}", "pid": os.getpid(), "embedder": "hashing", "store": "sqlite"})
    )
    stored = run("store", "kept by the embedded store", "--project", "p", data_dir=data_dir)
    assert stored.returncode == 0, messages(stored)
    assert "numpy" in imported(stored)  # ran embedded
    found = run("search", "embedded store", "--project", "p", data_dir=data_dir)
    assert found.returncode == 0 and "kept by the embedded store" in found.stdout
    hooked = run("hook", "stop", data_dir=data_dir, stdin=hook_input("stop.json"))
    assert "2 digest(s), 2 stored" in messages(hooked), messages(hooked)


def test_a_server_that_stopped_is_no_longer_asked(tmp_path):
    data_dir = tmp_path / "data"
    srv = Server(data_dir)
    try:
        assert run("store", "through the server", "--project", "p", data_dir=data_dir).returncode == 0
    finally:
        assert srv.stop() == 0
    assert not (data_dir / "serve.json").exists()  # withdrawn on the way out
    after = run("search", "through the server", "--project", "p", data_dir=data_dir)
    assert after.returncode == 0 and "through the server" in after.stdout
    assert "numpy" in imported(after)


def test_a_server_killed_without_withdrawing_is_not_asked(tmp_path):
    data_dir = tmp_path / "data"
    srv = announced(Server(data_dir))
    workers = _children_of(srv.process.pid)
    srv.stop(signal.SIGKILL)
    for pid in workers:  # orphaned by the SIGKILL
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert (data_dir / "serve.json").exists()
    done = run("store", "after a crash", "--project", "p", data_dir=data_dir)
    assert done.returncode == 0 and "numpy" in imported(done)


def _children_of(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:
            continue
        if f"PPid:\t{pid}" in lines:
            found.append(int(status.parent.name))
    return found


def test_every_memory_command_goes_to_the_running_server_without_loading_the_heavy_modules(served):
    """Issue 30: beside a server every memory command answers as store and search do (none
    loads numpy, pydantic or the model); a short id is the one memory of this data folder it names."""

    def ok(*args: str) -> subprocess.CompletedProcess:
        done = run(*args, data_dir=served.data_dir)
        assert done.returncode == 0, messages(done)
        # A short id is looked up in the data folder's SQLite file (sqlite3 imports datetime: 7 ms).
        allowed = {"datetime"} if args[0] in ("get", "pin", "unpin", "feedback", "forget", "restore") else set()
        assert heavy(done) == [] and sorted(imported(done) & set(NOT_FOR_A_QUERY) - allowed) == [], (
            args,
            messages(done),
        )
        return done

    memory_id = json.loads(ok("store", "Vacuum the SQLite file monthly", "--project", "every", "--json").stdout)[
        "memory"
    ]["id"]
    short = memory_id[:12]
    assert short in ok("list", "--project", "every").stdout  # a table shows 12 characters, --json the whole id
    listed = json.loads(ok("list", "--project", "every", "--limit", "5", "--json").stdout)
    assert [m["id"] for m in listed["memories"]] == [memory_id]
    assert "every" in ok("projects").stdout
    assert "Vacuum the SQLite file monthly" in ok("get", short).stdout
    assert "Pinned" in ok("pin", short).stdout
    assert json.loads(ok("list", "--project", "every", "--pinned", "--json").stdout)["memories"][0]["pinned"]
    ok("unpin", short)
    assert "helpful" in ok("feedback", short, "--helpful").stdout
    assert f"Forgot {memory_id}" in ok("forget", short, "--reason", "tidy").stdout
    assert f"Restored {memory_id}" in ok("restore", memory_id).stdout
    assert "at most 40" in ok("limit", "40", "--project", "every").stdout
    got = json.loads(ok("get", short, "--json").stdout)["memory"]
    assert got["helpful"] == 1 and got["pinned"] is False

    note = served.data_dir / "note.md"
    note.write_text("Rotate the gateway token yearly.\n")
    ingested = run("ingest", str(note), "--project", "every", data_dir=served.data_dir)
    assert ingested.returncode == 0 and heavy(ingested) == [], messages(ingested)  # files may ask git: not "lean"
    assert "1 stored" in ingested.stdout and "Rotate the gateway token" in ok("list", "--project", "every").stdout

    # What the server cannot be asked (an id no memory starts with) runs embedded, with its error.
    unknown = run("pin", "ffffffffffff", data_dir=served.data_dir)
    assert unknown.returncode == 1 and "no memory ffffffffffff" in messages(unknown)
