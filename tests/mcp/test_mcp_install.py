"""``capsule install claude-desktop|claude-code``: printing, and merging without clobbering."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcp_client.cli import main
from mcp_support import capsule_env, hook_input, new_data_dir

OTHER_SERVER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}
OTHER_HOOK = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check-bash.sh"}]}


def test_claude_desktop_prints_the_config_and_writes_nothing(tmp_path, capsys):
    config = tmp_path / "claude_desktop_config.json"
    assert main(["install", "claude-desktop", "--config", str(config)]) == 0
    printed = capsys.readouterr()
    entry = json.loads(printed.out)["mcpServers"]["capsule-memory"]  # stdout is the JSON alone: it pipes
    assert entry["args"][-1] == "mcp" and "env" not in entry
    assert str(config) in printed.err and "--write" in printed.err  # the hint is on stderr
    assert not config.exists()


def _capsule_on_path(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "capsule"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -m mcp_client \"$@\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return script


def test_claude_code_writes_the_portable_capsule_command(tmp_path, monkeypatch, capsys):
    # .mcp.json and .claude/settings.json are committed: no one's virtualenv path goes in them.
    _capsule_on_path(tmp_path, monkeypatch)
    project = tmp_path / "project"
    assert main(["install", "claude-code", "--write", "--dir", str(project)]) == 0
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["capsule-memory"]
    assert entry == {"type": "stdio", "command": "capsule", "args": ["mcp"]}
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["Stop"][0]["hooks"][0]["command"] == "capsule hook stop"
    assert "not on PATH" not in capsys.readouterr().err
    # Claude Desktop does not see the shell's PATH: its own config names the script whole.
    assert main(["install", "claude-desktop", "--config", str(tmp_path / "c.json")]) == 0
    desktop = json.loads(capsys.readouterr().out)["mcpServers"]["capsule-memory"]
    assert desktop["command"] == str(tmp_path / "bin" / "capsule")


def test_without_capsule_on_path_the_write_says_the_file_is_not_portable(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["install", "claude-code", "--write", "--dir", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "'capsule' is not on PATH" in err and sys.executable in err
    entry = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["capsule-memory"]
    assert entry["command"] == sys.executable  # still runs here


def test_claude_desktop_merge_keeps_other_servers_and_settings(tmp_path, capsys):
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {"github": OTHER_SERVER}, "globalShortcut": "Ctrl+Space"}))
    args = ["install", "claude-desktop", "--config", str(config), "--write",
            "--url", "https://abc.execute-api.eu-west-1.amazonaws.com", "--profile", "dev"]
    assert main(args) == 0
    assert "added MCP server 'capsule-memory' (1 other(s) kept)" in capsys.readouterr().out
    merged = json.loads(config.read_text())
    assert merged["globalShortcut"] == "Ctrl+Space" and merged["mcpServers"]["github"] == OTHER_SERVER
    assert merged["mcpServers"]["capsule-memory"]["env"] == {
        "CAPSULE_MEMORY_URL": "https://abc.execute-api.eu-west-1.amazonaws.com", "AWS_PROFILE": "dev"}
    assert json.loads((tmp_path / "claude_desktop_config.json.bak").read_text())["mcpServers"] == {
        "github": OTHER_SERVER}
    assert main(args) == 0
    assert "updated" in capsys.readouterr().out
    assert set(json.loads(config.read_text())["mcpServers"]) == {"github", "capsule-memory"}


def test_claude_code_merges_the_server_and_the_hooks_once(tmp_path, capsys):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": OTHER_SERVER}}))
    settings_path = tmp_path / ".claude" / "settings.json"
    settings_path.write_text(json.dumps({"permissions": {"allow": ["Bash(pytest:*)"]},
                                         "hooks": {"PreToolUse": [OTHER_HOOK]}}))
    args = ["install", "claude-code", "--write", "--dir", str(tmp_path)]
    assert main(args) == 0
    mcp = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert mcp["github"] == OTHER_SERVER and mcp["capsule-memory"]["type"] == "stdio"
    settings = json.loads(settings_path.read_text())
    assert settings["permissions"] == {"allow": ["Bash(pytest:*)"]}
    hooks = settings["hooks"]
    assert hooks["PreToolUse"][0] == OTHER_HOOK and hooks["PreToolUse"][1]["matcher"] == "Task|Agent"
    assert hooks["PreToolUse"][1]["hooks"][0]["command"].endswith("hook pre-tool-use")
    assert hooks["Stop"][0]["hooks"][0]["command"].endswith("hook stop")
    assert hooks["PostCompact"][0]["hooks"][0]["command"].endswith("hook post-compact")

    capsys.readouterr()
    assert main(args) == 0  # again: nothing doubled
    assert "Stop: already installed" in capsys.readouterr().out
    assert json.loads(settings_path.read_text()) == settings


def test_a_broken_config_is_refused_and_nothing_is_written(tmp_path, capsys):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{ not json")
    assert main(["install", "claude-code", "--write", "--dir", str(tmp_path)]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    assert not (tmp_path / ".mcp.json").exists()
    assert (tmp_path / ".claude" / "settings.json").read_text() == "{ not json"


def test_the_installed_stop_hook_command_runs_as_claude_code_would(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no other 'capsule' on PATH: this checkout's code runs
    assert main(["install", "claude-code", "--write", "--dir", str(tmp_path)]) == 0
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    data_dir = new_data_dir(tmp_path)
    done = subprocess.run(command, shell=True, input=hook_input("stop.json"), capture_output=True, text=True,
                          env=capsule_env(data_dir), timeout=60)
    assert done.returncode == 0 and "2 stored" in done.stderr, done.stderr


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code"])
def test_print_mode_shows_what_would_be_merged(client, tmp_path, capsys):
    extra = ["--dir", str(tmp_path)] if client == "claude-code" else ["--config", str(tmp_path / "c.json")]
    assert main(["install", client, *extra]) == 0
    printed = capsys.readouterr()
    assert "capsule-memory" in printed.out and "--write" in printed.out + printed.err
    assert list(tmp_path.iterdir()) == []
