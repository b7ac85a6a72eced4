"""The README's test command, ``./scripts/test`` (issue 30): the README and CI run that same line,
and the script names what a machine lacks (or installs it as root), installs the checkout into
``.venv`` once per pyproject.toml, and passes pytest's arguments through; the whole suite starts
with ruff and mypy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "test"


def test_the_readme_and_ci_run_the_same_test_line():
    readme = (REPO / "README.md").read_text("utf-8")
    test_it = readme[readme.index("**Test it**") :]
    block = re.search(r"```bash\n(.*?)```", test_it, re.S).group(1).strip()
    assert block == "./scripts/test"
    assert os.access(SCRIPT, os.X_OK)
    ci = (REPO / ".ci" / "run").read_text("utf-8")
    assert "set -euo pipefail" in ci
    assert [line for line in ci.splitlines() if line and not line.startswith(("#", "set ", "cd ", "export "))] == [
        "./scripts/test"
    ]
    script = SCRIPT.read_text("utf-8")
    for package in ("chromium", "openssl", "curl", "stunnel4", "postgresql", "aws-cdk@2"):
        assert package in script  # everything .ci/run used to install


def _fake_checkout(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A copy of the script in a checkout whose .venv's pip, python, ruff and mypy only log their arguments,
    run as a user who is not root, on a PATH without openssl, curl, stunnel, node, npm or cdk."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy2(SCRIPT, checkout / "scripts" / "test")
    (checkout / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    log = tmp_path / "log"
    venv_bin = checkout / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    for name in ("pip", "python", "ruff", "mypy"):
        (venv_bin / name).write_text(f'#!/bin/sh\necho {name} "$@" >> {log}\n')
        (venv_bin / name).chmod(0o755)
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("bash", "sh", "cat", "cut", "ls", "sha256sum", "dirname", "python3", "env"):
        found = shutil.which(name)
        assert found, name
        (tools / name).symlink_to(found)
    (tools / "id").write_text("#!/bin/sh\necho 1000\n")  # not root
    (tools / "id").chmod(0o755)
    env = {"PATH": str(tools), "HOME": str(tmp_path)}
    return checkout, env, log


def test_without_root_it_names_what_is_missing_then_installs_and_runs_pytest_with_the_arguments(tmp_path):
    checkout, env, log = _fake_checkout(tmp_path)
    done = subprocess.run(
        [str(checkout / "scripts" / "test"), "tests/cli", "-n", "0", "-k", "a b"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "not installed here" in done.stderr
    apt = next(line for line in done.stderr.splitlines() if "apt-get install" in line)
    for package in ("openssl", "curl", "stunnel4", "nodejs", "npm"):
        assert package in apt.split(), apt
    assert "npm install -g aws-cdk@2" in done.stderr
    assert log.read_text().splitlines() == ["pip install -q -e .[dev]", "python -m pytest tests/cli -n 0 -k a b"]

    again = subprocess.run(
        [str(checkout / "scripts" / "test")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 0
    # Installed once per pyproject.toml; the whole suite (no arguments) is linted and type-checked first.
    assert log.read_text().splitlines()[2:] == [
        "ruff check --quiet .",
        "ruff format --check --quiet .",
        "mypy",
        "python -m pytest",
    ]
