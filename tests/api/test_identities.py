"""Which tenant each kind of AWS identity gets (functions/tenancy.py), on API Gateway v2 events."""

from __future__ import annotations

import pytest

from capsule.core.errors import Unauthorized
from functions.tenancy import PER_SESSION_VARIABLE, tenant_of

from . import identities as ids
from .events import event

ROLE = "arn:aws:iam::123456789012:role/capsule-dev"


@pytest.mark.parametrize(
    "authorizer, tenant",
    [
        (ids.IAM_USER, "arn:aws:iam::123456789012:user/alice"),
        (ids.IAM_USER_WITH_PATH, "arn:aws:iam::123456789012:user/engineering/bob"),
        (ids.ROOT, "arn:aws:iam::123456789012:root"),
        (ids.PROFILE_SESSION_1, ROLE),
        (ids.PROFILE_SESSION_2, ROLE),
        (ids.SSO, "arn:aws:iam::123456789012:role/AWSReservedSSO_PowerUserAccess_0123456789abcdef"),
        (ids.ROLE_WITH_PATH, "arn:aws:iam::123456789012:role/deployer"),
        (ids.EC2_INSTANCE, "arn:aws:iam::123456789012:role/capsule-ec2"),
        (ids.ECS_TASK, "arn:aws:iam::123456789012:role/capsule-task"),
        (ids.FEDERATED, "arn:aws:sts::123456789012:federated-user/carol"),
        (ids.CHINA, "arn:aws-cn:iam::123456789012:role/capsule-dev"),
    ],
)
def test_each_identity_kind_has_a_stable_tenant(authorizer, tenant):
    assert tenant_of(event("health", authorizer=authorizer), keep_sessions=False) == tenant


def test_cognito_users_of_one_pool_role_are_separate_tenants():
    a = tenant_of(event("health", authorizer=ids.cognito("eu-west-1:aaaaaaaa-0000-0000-0000-000000000001")))
    b = tenant_of(event("health", authorizer=ids.cognito("eu-west-1:bbbbbbbb-0000-0000-0000-000000000002")))
    assert a != b
    assert a == (
        "cognito-identity:eu-west-1:11111111-2222-3333-4444-555555555555/eu-west-1:aaaaaaaa-0000-0000-0000-000000000001"
    )


def test_per_session_tenants_when_the_deployment_asks_for_them(monkeypatch):
    e1, e2 = event("health", authorizer=ids.PROFILE_SESSION_1), event("health", authorizer=ids.PROFILE_SESSION_2)
    monkeypatch.setenv(PER_SESSION_VARIABLE, "true")
    assert tenant_of(e1) == ids.PROFILE_SESSION_1["iam"]["userArn"] != tenant_of(e2)
    assert tenant_of(event("health", authorizer=ids.IAM_USER)) == ids.IAM_USER["iam"]["userArn"]
    monkeypatch.setenv(PER_SESSION_VARIABLE, "false")
    assert tenant_of(e1) == tenant_of(e2) == ROLE


def test_the_body_headers_and_query_never_choose_the_tenant():
    e = event(
        "store",
        authorizer=ids.PROFILE_SESSION_1,
        body={"project": "p", "content": "c", "tenant": "x"},
        query={"tenant": "x"},
    )
    e["headers"]["x-tenant"] = "x"
    assert tenant_of(e, keep_sessions=False) == ROLE
    with pytest.raises(Unauthorized):
        tenant_of(event("store", tenant=None, body={"tenant": "x"}))


def test_a_role_user_finds_next_hour_what_it_stored_this_hour(service, call, monkeypatch):
    """End to end through the handlers: the session renews, the memories stay."""
    monkeypatch.delenv(PER_SESSION_VARIABLE, raising=False)
    stored = call(
        event(
            "store",
            authorizer=ids.PROFILE_SESSION_1,
            body={"project": "api", "content": "deploys go through the blue/green pipeline"},
        )
    )
    assert stored.status == 201, stored
    found = call(
        event(
            "search", authorizer=ids.PROFILE_SESSION_2, body={"query": "blue green pipeline deploys", "project": "api"}
        )
    )
    assert [r["id"] for r in found.json["results"]] == [stored.json["memory"]["id"]]
    other_role = call(
        event("search", authorizer=ids.EC2_INSTANCE, body={"query": "blue green pipeline deploys", "project": "api"})
    )
    assert other_role.json["results"] == []
