"""Synthesize the CDK app once per session (it takes ~20 s) and share the template."""

from __future__ import annotations

import json
import os
import zipfile

import pytest

pytest.importorskip("aws_cdk", reason="aws-cdk-lib is in the 'infra' extra")
# jsii prints a banner on Node releases past their end of life; the synth itself is unaffected.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")


def stub_layer(path, embedders=("hashing", "openai", "voyage")) -> str:
    """Synthesis hashes the layer zip and reads its manifest; the real one comes from layers/build_layer.py."""
    from infra.assets import build_layer_script

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("python/capsule_layer_stub.txt", "built by layers/build_layer.py for a deploy")
        archive.writestr(build_layer_script().MANIFEST, json.dumps({"embedders": list(embedders)}))
    return str(path)


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory):
    import aws_cdk as cdk

    from infra.app import build_app

    tmp = tmp_path_factory.mktemp("cdk")
    app = cdk.App(outdir=str(tmp / "cdk.out"),
                  context={"layer_zip": stub_layer(tmp / "layer.zip"), "build_dir": str(tmp / "build")})
    app, stack = build_app(app)
    assembly = app.synth()  # runs the cdk-nag AwsSolutions checks: any finding raises here
    return assembly, stack


@pytest.fixture(scope="session")
def template(synthesized) -> dict:
    assembly, stack = synthesized
    return assembly.get_stack_by_name(stack.stack_name).template


@pytest.fixture(scope="session")
def stub_layer_zip(tmp_path_factory) -> str:
    return stub_layer(tmp_path_factory.mktemp("layer") / "layer.zip")
