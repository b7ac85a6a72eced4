"""`cdk synth` through the npm CLI, with no AWS credentials (what CI and a new user run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_cdk_synth_runs_offline_without_credentials_and_with_the_api_key_flag(tmp_path, stub_layer_zip):
    """One CLI synth, with ``api_key_auth`` on and the other context values set (the defaults are
    checked in test_stack.py and test_operations.py)."""
    cdk = shutil.which("cdk")
    if cdk is None:
        from tests.conftest import not_installed

        not_installed("the aws-cdk CLI is not installed (npm install -g aws-cdk@2)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_EC2_METADATA_DISABLED="true",
        CDK_DISABLE_VERSION_CHECK="1",
        CI="true",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="18,20",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        PYTHONPATH=os.pathsep.join([str(REPO / "layers"), str(REPO)]),
    )
    out = tmp_path / "cdk.out"
    result = subprocess.run(
        [
            cdk,
            "synth",
            "--app",
            f"{sys.executable} -m infra.app",
            "--output",
            str(out),
            "--quiet",
            "--no-notices",
            "-c",
            f"layer_zip={stub_layer_zip}",
            "-c",
            f"build_dir={tmp_path / 'build'}",
            "-c",
            "api_key_auth=true",
            "-c",
            "embedder=openai",
            "-c",
            "throttle_rate=300",
            "-c",
            "throttle_burst=900",
            "-c",
            "tenant_per_session=true",
            "-c",
            "alarm_email=none",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # The main stack and the routes' nested stacks (infra/api.py): the routes are in the latter.
    resources = [
        r
        for path in sorted(out.glob("CapsuleMemory*.template.json"))
        for r in json.loads(path.read_text())["Resources"].values()
    ]
    (authorizer,) = [r for r in resources if r["Type"] == "AWS::ApiGatewayV2::Authorizer"]
    assert authorizer["Properties"]["AuthorizerType"] == "REQUEST"
    assert authorizer["Properties"]["EnableSimpleResponses"] is True
    routes = [r["Properties"] for r in resources if r["Type"] == "AWS::ApiGatewayV2::Route"]
    for route in routes:
        expected = "CUSTOM" if route["RouteKey"].split(" ")[1].startswith("/v1/") else "NONE"
        assert route["AuthorizationType"] == expected, route["RouteKey"]
    handlers = {r["Properties"]["Handler"] for r in resources if r["Type"] == "AWS::Lambda::Function"}
    assert "functions.authorizer.handler" in handlers
    for fn in (r["Properties"] for r in resources if r["Type"] == "AWS::Lambda::Function"):
        env = fn["Environment"]["Variables"]
        assert env["CAPSULE_EMBEDDER"] == "openai" and env["CAPSULE_TENANT_PER_SESSION"] == "true"
    (stage,) = [r["Properties"] for r in resources if r["Type"] == "AWS::ApiGatewayV2::Stage"]
    assert stage["DefaultRouteSettings"] == {"ThrottlingBurstLimit": 900, "ThrottlingRateLimit": 300}
