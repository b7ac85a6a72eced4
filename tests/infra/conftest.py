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
    app = cdk.App(
        outdir=str(tmp / "cdk.out"),
        context={"layer_zip": stub_layer(tmp / "layer.zip"), "build_dir": str(tmp / "build")},
    )
    app, stack = build_app(app)
    assembly = app.synth()  # runs the cdk-nag AwsSolutions checks: any finding raises here
    return assembly, stack


def stack_templates(assembly, stack) -> dict[str, dict]:
    """The main stack's template and each nested stack's (the routes' shares, infra/api.py), by name."""
    found = {stack.stack_name: assembly.get_stack_by_name(stack.stack_name).template}
    for nested in stack.api.route_stacks:
        with open(os.path.join(assembly.directory, nested.template_file)) as handle:
            found[nested.node.id] = json.load(handle)
    return found


def _substitute(value, parameters: dict):
    if isinstance(value, dict):
        if set(value) == {"Ref"} and value["Ref"] in parameters:
            return parameters[value["Ref"]]
        return {k: _substitute(v, parameters) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, parameters) for v in value]
    return value


def merged_template(assembly, stack) -> dict:
    """One template holding the main stack's resources and its nested stacks', each reference to
    a nested stack's parameter replaced by what the main stack passes in (a Ref or GetAtt of its
    own resource), so assertions read the deployment as one whole."""
    main = assembly.get_stack_by_name(stack.stack_name).template
    merged = {**main, "Resources": dict(main["Resources"])}
    for nested in stack.api.route_stacks:
        resource = main["Resources"][stack.resolve(stack.get_logical_id(nested.nested_stack_resource))]
        with open(os.path.join(assembly.directory, nested.template_file)) as handle:
            template = json.load(handle)
        parameters = resource["Properties"].get("Parameters", {})
        for logical_id, value in template["Resources"].items():
            assert logical_id not in merged["Resources"], logical_id
            merged["Resources"][logical_id] = _substitute(value, parameters)
    return merged


@pytest.fixture(scope="session")
def templates(synthesized) -> dict[str, dict]:
    return stack_templates(*synthesized)


@pytest.fixture(scope="session")
def template(synthesized) -> dict:
    return merged_template(*synthesized)


@pytest.fixture(scope="session")
def stub_layer_zip(tmp_path_factory) -> str:
    return stub_layer(tmp_path_factory.mktemp("layer") / "layer.zip")
