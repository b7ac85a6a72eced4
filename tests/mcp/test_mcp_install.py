"""``capsule install claude-desktop|claude-code``: printing, and merging without clobbering."""

from __future__ import annotations

import json
import subprocess

import pytest

from mcp_client.cli import main
from mcp_support import capsule_env, hook_input, new_data_dir

OTHER_SERVER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}
OTHER_HOOK = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check-bash.sh"}]}


def test_claude_desktop_prints_the_config_and_writes_nothing(tmp_path, capsys):
    config = tmp_path / "claude_desktop_config.json"
    assert main(["install", "claude-desktop", "--config", str(config)]) == 0
    printed = capsys.readouterr().out
    entry = json.loads(printed[printed.index("{"):])["mcpServers"]["capsule-memory"]
    assert entry["args"][-1] == "mcp" and "env" not in entry
    assert not config.exists()


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
    out = capsys.readouterr().out
    assert "capsule-memory" in out and "--write" in out
    assert list(tmp_path.iterdir()) == []
