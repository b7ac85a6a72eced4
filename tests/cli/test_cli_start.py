"""How the ``capsule`` command starts and refuses (issue 30): ``--help`` lists every command from
the index without importing their modules, the index says what the modules register, and a
mistyped command or option is one line and a hint, naming the nearest one."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

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
