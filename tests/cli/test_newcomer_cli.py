"""A newcomer's first commands (issue 19): short ids, a mistyped path, an unknown option, the
default project, and plain English; each as a subprocess on a real data folder."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from mcp_client.hooks import project_of
from mcp_client.project_name import default_project
from tests.conftest import CLI, cli_env


def run(data_dir: Path, *args: str, cwd: Path | None = None, ok: bool = True, **env: str):
    proc = subprocess.run(
        [*CLI, *args], cwd=cwd or data_dir, env=cli_env(data_dir, **env), capture_output=True, text=True, timeout=120
    )
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_the_12_characters_search_prints_name_the_memory_for_every_command(tmp_path):
    memory_id = json.loads(run(tmp_path, "store", "Use WAL mode for SQLite", "--project", "api", "--json").stdout)[
        "memory"
    ]["id"]
    table = run(tmp_path, "search", "WAL mode", "--project", "api").stdout
    short = memory_id[:12]
    assert short in table and memory_id not in table  # what a person copies from the table
    assert "Pinned" in run(tmp_path, "pin", short).stdout
    assert json.loads(run(tmp_path, "get", short, "--json").stdout)["memory"]["pinned"] is True
    run(tmp_path, "unpin", short)
    run(tmp_path, "feedback", short, "--helpful")
    assert f"Forgot {memory_id}" in run(tmp_path, "forget", short).stdout
    assert f"Restored {memory_id}" in run(tmp_path, "restore", short).stdout
    got = json.loads(run(tmp_path, "get", short, "--json").stdout)["memory"]
    assert got["helpful"] == 1 and got["pinned"] is False

    too_short = run(tmp_path, "pin", memory_id[:5], ok=False)
    assert too_short.returncode == 1 and "at least 8 characters" in too_short.stderr
    unknown = run(tmp_path, "pin", "ffffffffffff", ok=False)
    assert unknown.returncode == 1 and "no memory ffffffffffff" in unknown.stderr


def test_ingest_of_a_path_that_does_not_exist_names_it_and_stores_nothing(tmp_path):
    (tmp_path / "notes.md").write_text("Deploys use blue-green switching.\n")
    proc = run(tmp_path, "ingest", "notes.md", "src/", "docs/", "--project", "api", ok=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "src/" in proc.stderr and "docs/" in proc.stderr and "notes.md" not in proc.stderr
    assert json.loads(run(tmp_path, "projects", "--json").stdout)["projects"] == []


def test_an_unknown_option_before_the_command_is_named(tmp_path):
    proc = run(tmp_path, "--bogus", ok=False)
    assert proc.returncode == 2
    assert "unknown option '--bogus'" in proc.stderr and "required" not in proc.stderr
    assert "unknown option '--bogus'" in run(tmp_path, "--bogus", "store", "x", ok=False).stderr
    assert run(tmp_path, "--help").returncode == 0


def test_one_memory_is_one_memory(tmp_path):
    run(tmp_path, "store", "only one", "--project", "p", "--pin")
    assert "1 pinned memory of project 'p'" in run(tmp_path, "list", "--project", "p", "--pinned").stdout
    run(tmp_path, "store", "a second", "--project", "p")
    assert "2 recent memories of project 'p'" in run(tmp_path, "list", "--project", "p").stdout


# ---- the default project: one rule for the CLI, the MCP server and the hooks ----------------


@pytest.fixture
def folders(tmp_path):
    repo = tmp_path / "home" / "me" / "src" / "shop-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "services" / "billing").mkdir(parents=True)
    worktree = tmp_path / "wt" / "feature-x"
    worktree.mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/feature-x\n")  # a worktree's .git is a file
    scratch = tmp_path / "home" / "me" / "scratch"
    scratch.mkdir(parents=True)
    return repo, worktree, scratch


def test_the_default_project_is_the_repository_or_folder_name(folders):
    repo, worktree, scratch = folders
    # Issue 29: one checkout, one project -- its canonical full path, as the Vector Bridge named it.
    real = os.path.realpath
    assert default_project({}, repo) == real(repo)
    assert default_project({}, repo / "services" / "billing") == real(repo)  # anywhere in the checkout
    assert default_project({}, worktree) == real(worktree)
    assert default_project({}, scratch) == real(scratch)
    assert default_project({"CAPSULE_PROJECT": "fixed"}, scratch) == "fixed"
    assert project_of({"cwd": str(repo / "services")}, {}) == real(repo)  # the hooks: the folder Claude runs in
    assert project_of({"cwd": str(scratch)}, {"CAPSULE_PROJECT": "fixed"}) == "fixed"


def test_the_cli_stores_in_the_repositorys_project(tmp_path, folders):
    repo, _, scratch = folders
    data = tmp_path / "data"
    data.mkdir()
    stored = json.loads(run(data, "store", "from a subfolder", "--json", cwd=repo / "services" / "billing").stdout)
    assert stored["memory"]["project"] == os.path.realpath(repo)
    stored = json.loads(run(data, "store", "from scratch", "--json", cwd=scratch).stdout)
    assert stored["memory"]["project"] == os.path.realpath(scratch)


def test_the_mcp_server_uses_the_same_default_project(tmp_path, folders):
    from mcp import Client, StdioServerParameters

    repo, _, _ = folders
    data = tmp_path / "data"
    data.mkdir()

    async def main():
        params = StdioServerParameters(
            command=CLI[0], args=[*CLI[1:], "mcp", "--embedded"], env=cli_env(data), cwd=str(repo / "services")
        )
        async with Client(params) as client:
            result = await client.call_tool(
                "memory_store", {"content": "stored by an agent", "tags": ["a"], "meta": {"tags": ["b", "a"]}}
            )
            assert not result.is_error, result.content
            return result.structured_content["memory"]

    memory = anyio.run(main)
    assert memory["project"] == os.path.realpath(repo)
    assert memory["meta"]["tags"] == ["b", "a"]  # tags beside meta.tags: both, meta.tags first, no repeat


def test_get_shows_the_memorys_facts_before_its_whole_text(tmp_path):
    memory_id = json.loads(
        run(tmp_path, "store", "Use WAL mode for SQLite", "--project", "api", "--tag", "sqlite", "--json").stdout
    )["memory"]["id"]
    shown = run(tmp_path, "get", memory_id[:12]).stdout
    assert shown.startswith(f"id:        {memory_id}\nproject:   api\n")
    assert "tags:      sqlite" in shown and "\n\nUse WAL mode for SQLite\n\n" in shown


def test_a_person_reads_the_same_12_characters_of_an_id_everywhere(tmp_path):
    """Issue 30: ids appeared as 32, 12 and `b762…a2d7` characters. Every table (list, search) and
    the web console show the first 12, which every one-memory command takes; JSON has the whole id."""
    memory_id = json.loads(run(tmp_path, "store", "Vacuum the SQLite file monthly", "-p", "ids", "--json").stdout)[
        "memory"
    ]["id"]
    assert len(memory_id) == 32
    for table in (run(tmp_path, "list", "-p", "ids").stdout, run(tmp_path, "search", "vacuum", "-p", "ids").stdout):
        assert memory_id[:12] in table and memory_id not in table
    assert json.loads(run(tmp_path, "list", "-p", "ids", "--json").stdout)["memories"][0]["id"] == memory_id
    assert "Vacuum the SQLite file monthly" in run(tmp_path, "get", memory_id[:12]).stdout
    # The console's formatters (shortId among them) are the ES module format.js that app.js imports.
    formats = (Path(__file__).parents[2] / "functions" / "console" / "format.js").read_text("utf-8")
    short = formats[formats.index("function shortId(id) {") :]
    assert short[: short.index("}")].split("{", 1)[1].strip() == "return id.slice(0, 12);"
