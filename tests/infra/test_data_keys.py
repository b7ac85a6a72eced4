"""The stack's KMS key for encryption at rest (capsule.crypto): made and retained by the stack, or
the customer's by ARN; every function that seals or opens memories (not the public document) may
GenerateDataKey, Encrypt and Decrypt with it, and every one is told which key it is."""

from __future__ import annotations

import pytest

from infra import context


def _functions(template):
    return {k: v for k, v in template["Resources"].items() if v["Type"] == "AWS::Lambda::Function"}


def test_the_stack_makes_a_rotated_retained_key(template):
    keys = {
        k: v
        for k, v in template["Resources"].items()
        if v["Type"] == "AWS::KMS::Key" and "data keys" in v["Properties"].get("Description", "")
    }
    assert len(keys) == 1
    ((name, key),) = keys.items()
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"
    for fn in _functions(template).values():
        env = fn["Properties"]["Environment"]["Variables"]
        assert env["CAPSULE_KMS_KEY_ID"] == {"Fn::GetAtt": [name, "Arn"]}


def test_every_function_may_use_the_key_for_what_the_library_asks(template):
    from functions.routes import ROUTES

    public = {f"{r.handler.replace(':', '.')}" for r in ROUTES if not r.auth}
    functions = {k: v for k, v in _functions(template).items() if v["Properties"]["Handler"] not in public}
    assert len(functions) < len(_functions(template))  # the public document may not use the key
    granted = {}
    for policy in (v for v in template["Resources"].values() if v["Type"] == "AWS::IAM::Policy"):
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(a.startswith("kms:") for a in actions) and "DataKeys" in str(statement["Resource"]):
                for role in policy["Properties"]["Roles"]:
                    granted[role["Ref"]] = set(actions)
    roles = {fn["Properties"]["Role"]["Fn::GetAtt"][0] for fn in functions.values()}
    assert roles <= set(granted), roles - set(granted)
    public_roles = {
        fn["Properties"]["Role"]["Fn::GetAtt"][0] for k, fn in _functions(template).items() if k not in functions
    }
    assert not public_roles & set(granted)
    assert all(actions == {"kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"} for actions in granted.values())


def test_the_customers_key_is_taken_by_arn_only():
    arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    assert context.kms_key_arn(arn) == arn and context.kms_key_arn(None) is None
    with pytest.raises(SystemExit, match="kms_key_arn"):
        context.kms_key_arn("alias/mine")
