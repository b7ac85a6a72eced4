"""The ``requestContext.authorizer.iam`` blocks API Gateway's HTTP API (IAM authorization)
builds for each kind of AWS identity, with the fields it sends (accessKey, accountId, callerId,
cognitoIdentity, principalOrgId, userArn, userId).

Access keys starting ASIA are temporary (STS) credentials, AKIA long-term ones; ``callerId``
and ``userId`` of a session are the role's unique id (AROA...) and the session name.
"""

from __future__ import annotations

from typing import Any

ACCOUNT = "123456789012"


def iam_block(
    user_arn: str,
    user_id: str,
    *,
    access_key: str = "ASIAQEXAMPLE7KEY",
    org: str | None = "o-a1b2c3d4e5",
    cognito: dict[str, Any] | None = None,
    account: str = ACCOUNT,
) -> dict[str, Any]:
    return {
        "iam": {
            "accessKey": access_key,
            "accountId": account,
            "callerId": user_id,
            "cognitoIdentity": cognito,
            "principalOrgId": org,
            "userArn": user_arn,
            "userId": user_id,
        }
    }


def assumed(role: str, session: str, *, role_id: str = "AROAQEXAMPLEROLEID", **kw: Any) -> dict[str, Any]:
    return iam_block(f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{session}", f"{role_id}:{session}", **kw)


IAM_USER = iam_block(f"arn:aws:iam::{ACCOUNT}:user/alice", "AIDAQEXAMPLEUSERID", access_key="AKIAQEXAMPLE7KEY")
IAM_USER_WITH_PATH = iam_block(
    f"arn:aws:iam::{ACCOUNT}:user/engineering/bob", "AIDAQEXAMPLEUSERI2", access_key="AKIAQEXAMPLE8KEY"
)
ROOT = iam_block(f"arn:aws:iam::{ACCOUNT}:root", ACCOUNT, access_key="AKIAQEXAMPLE9KEY", org=None)
# A `role_arn` profile: botocore names each session botocore-session-<epoch> and renews it hourly.
PROFILE_SESSION_1 = assumed("capsule-dev", "botocore-session-1795989600")
PROFILE_SESSION_2 = assumed("capsule-dev", "botocore-session-1795993200")
# IAM Identity Center: the permission set's role (its path /aws-reserved/sso.amazonaws.com/ is not in the ARN).
SSO = assumed("AWSReservedSSO_PowerUserAccess_0123456789abcdef", "alice@example.com", role_id="AROAQEXAMPLESSOROLE")
SSO_OTHER_USER = assumed(
    "AWSReservedSSO_PowerUserAccess_0123456789abcdef", "bob@example.com", role_id="AROAQEXAMPLESSOROLE"
)
# A role created with a path (arn:aws:iam::A:role/service/ci/deployer): the path is not in the session ARN.
ROLE_WITH_PATH = assumed("deployer", "GitHubActions", role_id="AROAQEXAMPLEPATHROL")
EC2_INSTANCE = assumed("capsule-ec2", "i-0a1b2c3d4e5f67890", role_id="AROAQEXAMPLEEC2ROLE")
ECS_TASK = assumed("capsule-task", "6f1c2e0b9a7d4e3f8a1b2c3d4e5f6a7b", role_id="AROAQEXAMPLEECSROLE")
FEDERATED = iam_block(f"arn:aws:sts::{ACCOUNT}:federated-user/carol", f"{ACCOUNT}:carol")
CHINA = {
    "iam": {
        **assumed("capsule-dev", "botocore-session-1")["iam"],
        "userArn": "arn:aws-cn:sts::123456789012:assumed-role/capsule-dev/botocore-session-1",
    }
}


def cognito(identity_id: str) -> dict[str, Any]:
    """A Cognito identity pool user: every user of the pool assumes the pool's one role."""
    return assumed(
        "Cognito_CapsuleAuth_Role",
        "CognitoIdentityCredentials",
        role_id="AROAQEXAMPLECOGNITO",
        cognito={
            "amr": ["authenticated", "cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Ab12Cd34E"],
            "identityId": identity_id,
            "identityPoolId": "eu-west-1:11111111-2222-3333-4444-555555555555",
        },
    )
