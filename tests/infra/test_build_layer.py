"""The layer build script (layers/build_layer.py): its pure parts, and one real build for this
machine's interpreter (``--platform host``, the same requirements, pins and pruning as the
arm64 build) from which every handler must import and answer with nothing else but what the
Lambda runtime ships (the AWS SDK)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy
import pytest
from packaging.requirements import Requirement

from infra.assets import build_layer_script, stage_functions

build_layer = build_layer_script()


def names(reqs: list[str]) -> set[str]:
    return {build_layer.requirement_name(r) for r in reqs}


def test_requirements_are_the_runtime_dependencies_and_the_embedders_extra():
    reqs = build_layer.requirements(build_layer.extras_for("voyage"))
    assert {"pydantic", "numpy", "aws-lambda-powertools", "pymongo", "google-re2"} <= names(reqs)
    assert not any(r.startswith("capsule-memory") for r in reqs)
    assert not names(reqs) & {"pytest", "aws-cdk-lib", "onnxruntime", "voyageai", "openai", "boto3"}
    assert {"onnxruntime", "tokenizers"} <= names(build_layer.requirements(build_layer.extras_for("minilm")))


def test_the_embedders_a_layer_can_run_follow_its_extras():
    assert build_layer.extras_for("openai") == ("mongo", "openai")
    assert build_layer.runnable_embedders(build_layer.extras_for("openai")) == ["hashing", "openai"]
    assert "minilm" not in build_layer.runnable_embedders(build_layer.extras_for("voyage"))
    assert build_layer.runnable_embedders(build_layer.extras_for("minilm")) == ["hashing", "minilm"]


def test_pip_looks_for_both_manylinux_tags_and_honours_the_pins(tmp_path):
    command = build_layer.pip_command(tmp_path / "site", ["numpy>=2.0"], tmp_path / "c.txt", "aarch64")
    platforms = [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"]
    assert platforms == ["manylinux2014_aarch64", "manylinux_2_28_aarch64"]
    assert command[command.index("--python-version") + 1] == "3.12" and "--only-binary=:all:" in command
    assert command[command.index("--constraint") + 1] == str(tmp_path / "c.txt")
    assert "--platform" not in build_layer.pip_command(tmp_path, [], tmp_path / "c.txt", "host")


def test_every_package_is_pinned_to_the_tests_version_except_the_sdk():
    pinned = build_layer.pins()
    assert pinned["numpy"] == numpy.__version__
    text = build_layer.constraints(pinned)
    assert f"numpy=={numpy.__version__}\n" in text
    assert not re.search(r"^(boto3|botocore|s3transfer|pip|setuptools|capsule-memory)==", text, re.M)
    assert re.search(r"^jmespath==", text, re.M)  # Powertools needs it: it goes in the layer


def _dist(site: Path, name: str, version: str, files: list[str]) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for file in files:
        (site / file).parent.mkdir(parents=True, exist_ok=True)
        (site / file).write_text("x = 1\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files))


def test_prune_drops_the_sdk_and_keeps_jmespath(tmp_path):
    _dist(tmp_path, "botocore", "1.40.0", ["botocore/__init__.py", "botocore/data/x.json"])
    _dist(tmp_path, "jmespath", "1.1.0", ["jmespath/__init__.py"])
    _dist(tmp_path, "numpy", "2.2.6", ["numpy/__init__.py"])
    build_layer.prune(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "jmespath",
        "jmespath-1.1.0.dist-info",
        "numpy",
        "numpy-2.2.6.dist-info",
    ]
    assert build_layer.version_problems(tmp_path, {"numpy": "2.4.6"}) == [
        "numpy 2.2.6 in the layer, 2.4.6 in the tests' environment"
    ]
    assert build_layer.version_problems(tmp_path, {"numpy": "2.2.6"}) == []


def test_the_size_limit_is_lambdas_250_mb_unzipped():
    assert build_layer.size_problem(250 * 2**20) is None
    assert "over Lambda's 250 MB" in build_layer.size_problem(250 * 2**20 + 1)


def test_the_zip_puts_the_library_under_python_with_its_manifest(tmp_path):
    root = tmp_path / "root"
    (root / "python" / "capsule").mkdir(parents=True)
    (root / "python" / "capsule" / "__init__.py").write_text("x = 1\n")
    build_layer.write_manifest(root / "python", build_layer.extras_for("openai"), "aarch64")
    build_layer.write_zip(root, tmp_path / "out" / "layer.zip")
    with zipfile.ZipFile(tmp_path / "out" / "layer.zip") as archive:
        assert sorted(archive.namelist()) == ["python/capsule/__init__.py", build_layer.MANIFEST]
    manifest = build_layer.read_manifest(tmp_path / "out" / "layer.zip")
    assert manifest["embedders"] == ["hashing", "openai"] and manifest["python"] == "3.12"
    assert manifest["platforms"] == ["manylinux2014_aarch64", "manylinux_2_28_aarch64"]


# ---- one real build (pip, from PyPI or its cache), shared by the tests below -----------------


@pytest.fixture(scope="module")
def host_layer(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("layer")
    return build_layer.build_tree(root, build_layer.extras_for("voyage"), platform="host", compile_with=sys.executable)


def _requires(info: Path) -> list[Requirement]:
    meta = (info / "METADATA").read_text("utf-8", "replace")
    return [
        Requirement(line.split(":", 1)[1].strip()) for line in meta.splitlines() if line.startswith("Requires-Dist:")
    ]


@pytest.mark.slow
def test_the_layer_holds_every_dependency_of_what_it_holds(host_layer):
    have = build_layer.installed(host_layer)
    environment = {
        "python_version": build_layer.PYTHON_VERSION,
        "sys_platform": "linux",
        "platform_machine": "aarch64",
        "platform_system": "Linux",
        "extra": "",
    }
    missing = []
    for info in host_layer.glob("*.dist-info"):
        for req in _requires(info):
            needed = req.marker is None or req.marker.evaluate(environment)
            name = build_layer.canonical(req.name)
            if needed and name not in have and name not in ("boto3", "botocore"):
                missing.append(f"{info.name} needs {req}")
    assert missing == []
    assert "jmespath" in have and not {"boto3", "botocore", "s3transfer"} & set(have)
    assert have["numpy"] == numpy.__version__  # the tests' numpy, not an older wheel
    assert json.loads((host_layer / "capsule_layer.json").read_text())["bytecode"] is True


HANDLER_CHECK = r"""
import json, sys
sys.path[:0] = [ASSET, LAYER, RUNTIME]
from functions import app, routes
from functions.app import LocalContext
statuses = {}
for route in routes.ROUTES:
    module, _, name = route.handler.partition(":")
    handler = getattr(__import__(module, fromlist=[name]), name)
    path = route.path.replace("{id}", "m-1")
    event = {"version": "2.0", "routeKey": f"{route.method} {route.path}", "rawPath": path, "rawQueryString": "",
             "headers": {"content-type": "application/json"}, "isBase64Encoded": False,
             "pathParameters": {"id": "m-1"} if "{id}" in route.path else {},
             "requestContext": {"http": {"method": route.method, "path": path, "sourceIp": "127.0.0.1"},
                                "requestId": "r", "routeKey": f"{route.method} {route.path}", "stage": "$default",
                                "authorizer": {"iam": {"userArn": "arn:aws:iam::123456789012:user/alice"}}},
             "body": "{}" if route.method in ("POST", "PUT", "PATCH") else None}
    statuses[route.name] = handler(event, LocalContext(function_name=route.name))["statusCode"]
import capsule.store.mongo, capsule.store.mongo_learning, capsule.embedders.remote
from aws_lambda_powertools.utilities import parameters  # the secret's reader (boto3 from the runtime)
capsule.embedders.remote.VoyageEmbedder("key")
outside = sorted({m.__file__ for m in list(sys.modules.values())
                  if getattr(m, "__file__", None) and "site-packages" in m.__file__})
print(json.dumps({"statuses": statuses, "outside": outside}))
"""


@pytest.mark.slow
def test_every_handler_imports_and_answers_from_the_layer_alone(host_layer, tmp_path):
    """Isolated (-I -S: no site-packages): the functions asset, the layer and the runtime's SDK."""
    runtime = build_layer.link_runtime_sdk(tmp_path / "runtime")
    asset = stage_functions(tmp_path / "build")
    script = (
        HANDLER_CHECK.replace("ASSET", repr(str(asset)))
        .replace("LAYER", repr(str(host_layer)))
        .replace("RUNTIME", repr(str(runtime)))
    )
    env = {
        "CAPSULE_STORE": "sqlite",
        "CAPSULE_DATA_DIR": str(tmp_path / "data"),
        "CAPSULE_EMBEDDER": "hashing",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["outside"] == []  # nothing came from an installed site-packages
    assert {name for name, status in result["statuses"].items() if status >= 500} == set(), result["statuses"]
    assert result["statuses"]["health"] == 200 and result["statuses"]["openapi"] == 200
