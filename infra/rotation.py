"""The deployment secret's rotation (``-c secret_rotation_days=N``): a function Secrets Manager
calls every N days (functions/rotation.py) that moves ``mongodb_uri`` to the other of two Atlas
database users with a new password, through Atlas's Administration API.

It reads the Atlas service account from a secret of the deployer's (``-c atlas_admin_secret_arn``),
kept apart from the one every API function reads. The Administration API is on the public
internet only, so the function runs where the others do and needs their route out: the public
network, or a NAT gateway (``atlas_network=nat``, or PrivateLink with a remote embedder);
infra/context.py refuses the other cases at synth.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Duration, Validations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from functions.rotation import ADMIN_SECRET_VARIABLE, TEST_WAIT_S

from .lambdas import Shared, python_function

HANDLER = "functions.rotation:handler"
# The four steps, with testSecret's wait for Atlas to deploy the user: well within this.
TIMEOUT_S = int(TEST_WAIT_S) + 120


class SecretRotation(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        shared: Shared,
        secret: secretsmanager.Secret,
        admin_secret_arn: str,
        every_days: int,
    ) -> None:
        super().__init__(scope, id)
        admin = secretsmanager.Secret.from_secret_complete_arn(self, "AtlasAdmin", admin_secret_arn)
        self.function: lambda_.Function = python_function(
            self,
            "Rotate",
            # Not the shared database roles (infra/atlas_auth.py): with them there is no password to rotate.
            Shared(
                code=shared.code,
                layer=shared.layer,
                environment={ADMIN_SECRET_VARIABLE: admin_secret_arn, "POWERTOOLS_SERVICE_NAME": "capsule-memory"},
                placement=shared.placement,
            ),
            handler=HANDLER,
            memory_mb=256,
            timeout_s=TIMEOUT_S,
            description="Rotates the secret's database password between two Atlas users",
        )
        admin.grant_read(self.function)
        # Grants the function the secret's read, write and version-stage rights, and Secrets Manager the invoke.
        self.schedule = secret.add_rotation_schedule(
            "Schedule", rotation_lambda=self.function, automatically_after=Duration.days(every_days)
        )
        assert self.function.role is not None
        Validations.of(self.function.role).acknowledge(
            Acknowledgment(
                id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
                reason="secretsmanager:GetRandomPassword, which createSecret calls, acts on no resource: "
                "IAM takes only * for it (add_rotation_schedule's own grant)",
            )
        )
