"""Issue 35, deliverable 8: docs/aws.md's deploy walk-through works as printed, up to the deploy.

Each line of its first block runs here as far as it can without an AWS account: the install's
extras exist (CI has just installed them), the layer is built as printed (arm64 wheels from
PyPI; a machine without a working python3.12 builds it without bytecode and says so), the quota
check runs and says what it could not read, and the deploy's own context values synthesize
through the CDK CLI and cdk.json (cdk-nag included), with the layer just built.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```bash\n(.*?)```", re.S)

pytestmark = pytest.mark.slow


def walkthrough() -> list[str]:
    first = BLOCK.search((REPO / "docs" / "aws.md").read_text("utf-8"))
    assert first is not None
    return [line.split("  #")[0].strip() for line in first.group(1).splitlines() if line.strip()]


def offline_env(tmp_path: Path) -> dict[str, str]:
    """No AWS credentials of any kind, and the venv first on PATH (the walk-through activates it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        CDK_DISABLE_VERSION_CHECK="1",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="18,20",
    )
    return env


def test_the_walkthrough_runs_as_printed_up_to_the_deploy(tmp_path):
    install, build, precheck, deploy = walkthrough()
    env = offline_env(tmp_path)

    # 1. The install: the extras it names exist (CI ran this install before the suite).
    assert install == "python3 -m venv .venv && .venv/bin/pip install -e '.[infra,mongo]' && npm install -g aws-cdk"
    extras = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]
    assert {"infra", "mongo"} <= set(extras)

    # 2. The layer, as printed; only where it is written differs (the repository's build/ is left alone).
    assert build == ".venv/bin/python layers/build_layer.py"
    layer = tmp_path / "layer.zip"
    built = subprocess.run(
        [sys.executable, "layers/build_layer.py", "--out", str(layer)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert layer.is_file() and "MB unzipped" in built.stdout

    # 3. The quota check: without an account it says what it could not read (status 2), no traceback.
    assert precheck == ". .venv/bin/activate && capsule cloud precheck"
    checked = subprocess.run(
        [sys.executable, "-m", "capsule_cli", "cloud", "precheck"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 2, checked.stderr[-3000:]
    assert "could not read: lambda:GetAccountSettings" in checked.stdout and "Traceback" not in checked.stderr

    # 4. The deploy's context values, synthesized by the CLI through cdk.json with the layer built above.
    words = shlex.split(deploy)
    assert words[:4] == ["cdk", "bootstrap", "&&", "cdk"] and words[4] == "deploy"
    flags = [
        word.replace("REGION", "eu-west-1").replace("vpce-svc-ID", "vpce-svc-0123456789abcdef0") for word in words[5:]
    ]
    cdk = shutil.which("cdk", path=env["PATH"])
    if cdk is None:
        from tests.conftest import not_installed

        not_installed("the aws-cdk CLI is not installed (npm install -g aws-cdk@2)")
    out = tmp_path / "cdk.out"
    synth = subprocess.run(
        [cdk, "synth", "--output", str(out), "--quiet", "--no-notices", *flags]
        + ["-c", f"layer_zip={layer}", "-c", f"build_dir={tmp_path / 'build'}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert synth.returncode == 0, synth.stderr[-3000:]
    main = json.loads((out / "CapsuleMemory.template.json").read_text())
    assert {"ApiUrl", "ApiArn", "InvokePolicy", "SecretArn"} <= set(main["Outputs"])
