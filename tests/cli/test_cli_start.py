"""How the ``capsule`` command starts and refuses (issue 30): ``--help`` lists every command from
the index without importing their modules, the index says what the modules register, and a
mistyped command or option is one line and a hint, naming the nearest one."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import time

import pytest

from mcp_client import cli
from mcp_client.strict_cli import StrictParser
from tests.conftest import CLI, cli_env


def run(tmp_path, *args: str, importtime: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, "-X", "importtime", *CLI[1:]] if importtime else CLI
    return subprocess.run([*command, *args], cwd=tmp_path, env=cli_env(tmp_path), capture_output=True, text=True,
                          timeout=120)


def registered() -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for module in cli.COMMAND_MODULES:
        sub = StrictParser(prog="capsule").add_subparsers()
        importlib.import_module(module).register(sub)
        for action in sub._choices_actions:
            found[action.dest] = (module, action.help)
    return found


def test_the_command_index_is_what_the_modules_register():
    assert cli.COMMAND_INDEX == registered()  # a new command: add it to COMMAND_INDEX, with its help


def test_help_lists_every_command_without_importing_their_modules(tmp_path):
    done = run(tmp_path, "--help", importtime=True)
    assert done.returncode == 0
    loaded = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    # governance_cmd gives store its retention options (a few argparse lines); the rest stay unloaded
    assert sorted(loaded & set(cli.COMMAND_MODULES)) == ["mcp_client.governance_cmd"]
    assert not loaded & {"numpy", "pydantic", "capsule.service", "capsule.models"}
    for name in [*cli.BUILTIN_COMMANDS, *cli.COMMAND_INDEX]:
        assert f"    {name} " in done.stdout or f"    {name}\n" in done.stdout, name


def test_the_whole_parser_still_builds():
    parser = cli.build_parser(whole=True)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) == {*cli.BUILTIN_COMMANDS, *cli.COMMAND_INDEX}


@pytest.mark.parametrize("args, first", [
    (["search", "deploy", "--pinnned"], "capsule search: error: unknown option '--pinnned' (did you mean"),
    (["store", "x", "--outcom", "success"], "capsule store: error: unknown option '--outcom' (did you mean '--outcome'?)"),
    (["list", "--limit", "many"], "capsule list: error: argument --limit: invalid int value: 'many'"),
    (["serach", "deploy"], "capsule: error: unknown command 'serach' (did you mean 'search'?)"),
    (["projets"], "capsule: error: unknown command 'projets' (did you mean 'projects'?)"),
    (["instal", "claude-code"], "capsule: error: unknown command 'instal' (did you mean 'install'?)"),
])
def test_a_mistake_is_one_line_and_a_hint(tmp_path, args, first):
    done = run(tmp_path, *args)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith(first), lines[0]
    assert lines[1].startswith("hint: '") and "--help' shows the usage" in lines[1]


# ---- every command fast (issue 30): --help loads no library, and beside a server no command does ----

LIBRARY = ("numpy", "pydantic", "onnxruntime", "capsule.service", "capsule.models", "functions.scopes")


def loaded_modules(done: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("command", [*cli.BUILTIN_COMMANDS, *cli.COMMAND_INDEX])
def test_every_commands_help_builds_its_parser_without_the_library(tmp_path, command):
    done = run(tmp_path, command, "--help", importtime=True)
    assert done.returncode == 0 and "usage: capsule " in done.stdout, done.stderr[-2000:]
    # bench measures with numpy arrays (its own module's import; 0.2 s), nothing more
    allowed = {"numpy"} if command == "bench" else set()
    assert sorted(m for m in LIBRARY if m in loaded_modules(done) and m not in allowed) == [], command


def test_the_values_written_out_for_help_are_the_librarys():
    from capsule.jobs import JOB_NAMES
    from functions.workers import WorkerConfig
    from mcp_client import jobs_cmd, serve

    assert jobs_cmd.JOB_NAMES == JOB_NAMES
    assert serve.HEAD_TIMEOUT_S == WorkerConfig.head_timeout_s


@pytest.fixture(scope="module")
def beside_a_server(tmp_path_factory):
    from tests.serve.server import Server

    data_dir = tmp_path_factory.mktemp("beside")
    srv = Server(data_dir)
    deadline = time.monotonic() + 120
    while not (data_dir / "serve.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield srv
    assert srv.stop() == 0


def test_the_other_commands_ask_the_running_server_without_the_library(beside_a_server):
    from tests.serve.server import environment

    def ok(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "mcp_client", *args], capture_output=True,
                              text=True, timeout=120,
                              env={**environment(), "CAPSULE_DATA_DIR": str(beside_a_server.data_dir)})
        messages = "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))
        assert done.returncode == 0, (args, messages)
        assert sorted(m for m in LIBRARY if m in loaded_modules(done)) == [], (args, messages)
        return done

    memory_id = json.loads(ok("store", "Vacuum the SQLite file monthly", "--project", "beside", "--json").stdout)[
        "memory"]["id"]
    history = ok("history", memory_id[:12])
    assert "1 (current)" in history.stdout and "Vacuum the SQLite file monthly" in history.stdout
    assert json.loads(ok("history", memory_id, "--json").stdout)["versions"][0]["version"] == 1
    assert "pending candidate(s)" in ok("candidates", "--project", "beside").stdout
    assert json.loads(ok("solutions", "list", "--json").stdout)["solutions"] == []
    assert "matched" in ok("solutions", "search", "ModuleNotFoundError: No module named 'mcp'").stdout
    assert "API KEY" in ok("keys", "list").stdout
