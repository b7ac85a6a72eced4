"""The shell and JSON examples of the README and of docs/*.md, run as printed against a live ``capsule serve``.

Every fenced ``bash`` block is either run (the README's first, then each page of DOCS in order, with
``bash -euo pipefail``, the venv's ``capsule`` on PATH, the server's data folder and its port in place
of 8787) or listed in NOT_RUN with the reason; a new block fails this test until someone decides
which. A block is known by its first line, or its second when the first is the activate step. Every
``json`` block parses, and each is checked against what it shows: the configs ``capsule install``
writes, and a memory body the server stores.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .server import ROOT, Server

pytestmark = pytest.mark.slow

README = ROOT / "README.md"
# The pages whose examples run, in the order they run: the README, these pages of docs/, then any other.
ORDER = (
    "getting-started",
    "claude",
    "http-api",
    "search",
    "transfer",
    "capture",
    "governance",
    "learning",
    "aws",
    "operations",
)
DOCS = [
    README,
    *sorted(
        (ROOT / "docs").glob("*.md"), key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.name)
    ),
]
ACTIVATE = "source .venv/bin/activate"
BLOCK = re.compile(r"^```(bash|json)\n(.*?)^```$", re.S | re.M)
# First line of a block -> the folder it runs in ("repo": the checkout, for the files it names).
RUN = {
    "capsule limit 500 --project api": "repo",
    "TOKEN=$(capsule keys token)": "scratch",
    "capsule install claude-desktop ": "scratch",
    "capsule install claude-code ": "scratch",
    "capsule solutions import tests/learning/fixpacks/": "repo",
    "capsule export --project api": "scratch",
}
NOT_RUN = {
    "python3 -m venv .venv && .venv/bin/pip install -e '.[local]'": "the install itself (test_readme_install checks "
    "what it leaves on PATH)",
    "./scripts/test": "the test command: it runs this suite (tests/cli/test_test_script.py runs its checks)",
    "capsule bench ": "benchmarks and evals take minutes and need the datasets",
    "capsule import vector-bridge": "needs the original projects' databases",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[infra,mongo]'": "deploys to an AWS account "
    "(tests/infra/test_deploy_walkthrough.py runs it up to the deploy)",
    "aws secretsmanager put-secret-value": "needs an AWS account",
    "aws iam put-role-policy": "needs an AWS account and a deployed stack",
    "capsule sync both --url https://api.example.com": "needs a remote tenant (tests/serve/test_sync_http.py syncs "
    "with a live capsule serve)",
    "capsule capture transcript.jsonl": "a placeholder transcript (tests/cli/test_capture_cli.py runs capture on "
    "real ones)",
}


def blocks(kind: str, pages: list[Path] = DOCS) -> list[str]:
    return [body for page in pages for lang, body in BLOCK.findall(page.read_text("utf-8")) if lang == kind]


def key_line(block: str) -> str:
    """The line a block is known by: its first, or the next when the first only puts capsule on PATH."""
    lines = block.splitlines()
    return lines[1] if lines[0].startswith(ACTIVATE) and len(lines) > 1 else lines[0]


def decision(block: str, table: dict[str, str]) -> str | None:
    first = key_line(block)
    return next((value for key, value in table.items() if first.startswith(key)), None)


def test_every_shell_block_is_run_or_says_why_not():
    undecided = [key_line(b) for b in blocks("bash") if decision(b, RUN) is None and decision(b, NOT_RUN) is None]
    assert undecided == [], "add each to RUN or NOT_RUN"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("readme-data")
    server = Server(data_dir)
    yield server
    server.stop()


def _env(live: Server, home: Path) -> dict[str, str]:
    capsule = Path(sys.executable).parent / "capsule"
    assert capsule.exists(), f"the README's 'capsule' is the installed script; {capsule} is missing"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAPSULE_", "XDG_", "AWS_"))}
    env.update(
        PATH=os.pathsep.join([str(capsule.parent), "/usr/bin", "/bin"]),
        HOME=str(home),
        CAPSULE_DATA_DIR=str(live.data_dir),
        CAPSULE_EMBEDDER="hashing",
    )
    return env


def _outputs(text: str) -> list[dict]:
    """The JSON documents curl printed one after another."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text.strip()):
        document, at = decoder.raw_decode(text, at)
        found.append(document)
        while at < len(text) and text[at].isspace():
            at += 1
    return found


def test_the_shell_examples_run_as_printed(live, tmp_path):
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    home.mkdir()
    scratch.mkdir()
    env = _env(live, home)
    ran = []
    for block in blocks("bash"):
        where = decision(block, RUN)
        if where is None:
            continue
        script = block.replace("127.0.0.1:8787", f"127.0.0.1:{live.port}")
        # The venv the README's first command made is the one running these tests, wherever it is.
        script = script.replace("source .venv/bin/activate", f"source {Path(sys.prefix) / 'bin' / 'activate'}")
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=ROOT if where == "repo" else scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"{block}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        ran.append((key_line(block), done.stdout))
    # Every RUN entry names a block that exists (a block may be printed on two pages: both run).
    assert {key for key in RUN if any(line.startswith(key) for line, _ in ran)} == set(RUN)
    outputs = {}
    for line, output in ran:
        outputs.setdefault(line, output)  # the first time a block ran
    # The curl examples got answers, not errors: the memory with its tags, and a search that finds it.
    stored, found = _outputs(outputs["TOKEN=$(capsule keys token)"])
    assert stored["memory"]["meta"]["tags"] == ["sqlite"], stored
    assert found["results"][0]["id"] == stored["memory"]["id"], found
    projects = json.loads(
        subprocess.run(["capsule", "projects", "--json"], env=env, capture_output=True, text=True, check=True).stdout
    )["projects"]
    assert any(p["project"] == "api" and p["retention_limit"] == 500 for p in projects)
    assert (scratch / "api.jsonl").stat().st_size > 0 and (scratch / ".mcp.json").exists()


def test_the_json_examples_are_what_the_commands_write_and_what_the_api_takes(live, tmp_path):
    env = _env(live, tmp_path)
    examples = [json.loads(block) for block in blocks("json")]  # every one parses
    project = tmp_path / "project"
    subprocess.run(
        ["capsule", "install", "claude-code", "--write", "--dir", str(project)],
        env=env,
        check=True,
        capture_output=True,
    )
    written_mcp = json.loads((project / ".mcp.json").read_text())
    written_hooks = json.loads((project / ".claude" / "settings.json").read_text())
    desktop = json.loads(
        subprocess.run(
            ["capsule", "install", "claude-desktop", "--project", "my-project"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    checked = 0
    for example in examples:
        if "hooks" in example:
            assert example == written_hooks
        elif example.get("mcpServers", {}).get("capsule-memory", {}).get("type") == "stdio":
            assert example == written_mcp
        elif "mcpServers" in example:  # Claude Desktop's: the written one names the script's full path
            entry = desktop["mcpServers"]["capsule-memory"]
            assert Path(entry["command"]).name == "capsule"
            assert example == {"mcpServers": {"capsule-memory": {**entry, "command": "capsule"}}}
        elif "content" in example:
            reply = live.request("POST", "/v1/memories", example)
            assert reply.status == 201, reply
            assert reply.json["memory"]["meta"]["tags"] == example["tags"]
            assert reply.json["memory"]["meta"]["type"] == example["meta"]["type"]
        elif "series" in example:  # GET /v1/usage's answer, as its model reads it
            from capsule.service.usage import UsageReport

            assert UsageReport.model_validate(example).model_dump(exclude_unset=True) == example
        else:
            pytest.fail(f"a JSON example this test does not check: {example}")
        checked += 1
    assert checked == len(examples) >= 4


def test_the_first_command_says_how_capsule_gets_on_path(tmp_path):
    """After the README's install, `capsule` is in .venv/bin only: a new shell does not find it
    until it runs what the README says right below the command."""
    text = README.read_text("utf-8")
    first = blocks("bash", [README])[0]
    assert first.startswith("python3 -m venv .venv") and ".venv/bin/capsule" in first
    after = text[text.index(first) + len(first) :][:1500]
    activate = re.search(r"`(source \.venv/bin/activate)`", after)
    assert activate, "the README must say, after its first command, how to get capsule on PATH"
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".venv").symlink_to(Path(sys.prefix))  # the venv the first command made, in its place
    venv_bin = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p and Path(p) != Path(venv_bin))
    env = {"PATH": path, "HOME": str(tmp_path)}
    if shutil.which("capsule", path=path) is None:  # a new shell: not found until activated
        fresh = subprocess.run(
            ["bash", "--noprofile", "--norc", "-c", "capsule --help"],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
        )
        assert fresh.returncode == 127
    shell = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", f"{activate.group(1)} && command -v capsule && capsule keys --help"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines()[0].endswith("/bin/capsule")
    # ...and the first block of capsule commands starts with that step, so it works in a new shell as printed.
    first_cli = next(b for b in blocks("bash", [README]) if "\ncapsule " in b)
    assert first_cli.splitlines()[0].startswith(activate.group(1)), first_cli.splitlines()[0]
