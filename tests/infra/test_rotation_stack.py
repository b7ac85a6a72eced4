"""The deployment secret's rotation (infra/rotation.py): with ``-c secret_rotation_days`` and
``-c atlas_admin_secret_arn`` the stack schedules the rotation function on the secret, lets it read
the service account's secret and nothing of the API's data key; the pair is refused by name where
rotation could not work (infra/context.py). Synthesized once, with cdk-nag's checks."""

from __future__ import annotations

import pytest

from infra import context
from tests.infra.conftest import stack_templates, stub_layer

ADMIN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:atlas-admin-AbCdEf"


@pytest.fixture(scope="module")
def rotating(tmp_path_factory):
    import aws_cdk as cdk

    from infra.app import build_app

    tmp = tmp_path_factory.mktemp("rotation")
    app = cdk.App(
        outdir=str(tmp / "cdk.out"),
        context={
            "layer_zip": stub_layer(tmp / "layer.zip"),
            "build_dir": str(tmp / "build"),
            "secret_rotation_days": "30",
            "atlas_admin_secret_arn": ADMIN,
        },
    )
    app, stack = build_app(app)
    assembly = app.synth()  # cdk-nag's AwsSolutions checks: a finding raises here
    return assembly.get_stack_by_name(stack.stack_name).template, stack_templates(assembly, stack)


def _of(template: dict, kind: str) -> dict[str, dict]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def test_the_secret_rotates_every_n_days_through_the_rotation_function(rotating):
    main, _ = rotating
    (schedule,) = _of(main, "AWS::SecretsManager::RotationSchedule").values()
    props = schedule["Properties"]
    assert props["RotationRules"]["ScheduleExpression"] == "rate(30 days)"
    function_id = props["RotationLambdaARN"]["Fn::GetAtt"][0]
    function = main["Resources"][function_id]["Properties"]
    assert function["Handler"] == "functions.rotation.handler"
    assert function["Environment"]["Variables"]["CAPSULE_ATLAS_ADMIN_SECRET_ARN"] == ADMIN


def test_only_the_rotation_function_reads_the_admin_secret(rotating):
    main, templates = rotating
    readers = []
    for name, template in templates.items():
        for logical_id, policy in _of(template, "AWS::IAM::Policy").items():
            if ADMIN in str(policy["Properties"]["PolicyDocument"]):
                readers.append((name, logical_id))
    assert len(readers) == 1 and readers[0][0] == next(iter(templates)), readers


def test_without_the_options_nothing_rotates(template):
    assert not _of(template, "AWS::SecretsManager::RotationSchedule")


@pytest.mark.parametrize(
    "days, arn, route_out, iam, named",
    [
        ("30", None, True, False, "atlas_admin_secret_arn"),
        (None, ADMIN, True, False, "secret_rotation_days"),
        ("0", ADMIN, True, False, "secret_rotation_days"),
        ("400", ADMIN, True, False, "secret_rotation_days"),
        ("30", "atlas-admin", True, False, "atlas_admin_secret_arn"),
        ("30", ADMIN, True, True, "atlas_iam_auth"),
        ("30", ADMIN, False, False, "atlas_network=nat"),
    ],
)
def test_a_rotation_that_could_not_work_is_refused_by_name(days, arn, route_out, iam, named):
    with pytest.raises(SystemExit, match=named):
        context.secret_rotation(days, arn, route_out=route_out, atlas_iam_auth=iam)


def test_no_rotation_options_is_no_rotation():
    assert context.secret_rotation(None, None, route_out=False, atlas_iam_auth=True) is None
    assert context.secret_rotation("30", ADMIN, route_out=True, atlas_iam_auth=False) == (30, ADMIN)
