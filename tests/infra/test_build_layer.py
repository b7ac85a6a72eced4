"""The layer build script's pure parts (the build itself downloads wheels: run it by hand)."""

from __future__ import annotations

import importlib.util
import zipfile

from infra.assets import REPO

spec = importlib.util.spec_from_file_location("build_layer", REPO / "layers" / "build_layer.py")
build_layer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_layer)


def test_requirements_are_the_runtime_dependencies_and_the_hosted_extras():
    reqs = build_layer.requirements(("mongo", "voyage"))
    names = {r.split(">")[0].split("=")[0].split("<")[0].strip() for r in reqs}
    assert {"pydantic", "numpy", "aws-lambda-powertools", "pymongo", "voyageai"} <= names
    assert not any(r.startswith("capsule-memory") for r in reqs)
    assert not names & {"pytest", "aws-cdk-lib", "onnxruntime"}  # tests, infra and the offline model stay out


def test_the_size_limit_is_lambdas_250_mb_unzipped():
    assert build_layer.size_problem(250 * 2**20) is None
    assert "over Lambda's 250 MB" in build_layer.size_problem(250 * 2**20 + 1)


def test_the_zip_puts_the_library_under_python(tmp_path):
    root = tmp_path / "root"
    (root / "python" / "capsule").mkdir(parents=True)
    (root / "python" / "capsule" / "__init__.py").write_text("x = 1\n")
    build_layer.write_zip(root, tmp_path / "out" / "layer.zip")
    with zipfile.ZipFile(tmp_path / "out" / "layer.zip") as archive:
        assert archive.namelist() == ["python/capsule/__init__.py"]
    assert build_layer.tree_size(root) == 6
