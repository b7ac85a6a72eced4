"""The KMS key that wraps every tenant's data key (capsule.crypto): one the stack creates
(rotated yearly by KMS), or the customer's own, by ARN (``-c kms_key_arn=...``). Every function
that seals or opens memories may use it for exactly what the library asks of it: GenerateDataKey,
Encrypt, Decrypt (infra/stack.py leaves out the public document and the authorizer)."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

ACTIONS = ("kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")


class DataKeys(Construct):
    def __init__(self, scope: Construct, id: str, *, key_arn: str | None = None) -> None:
        super().__init__(scope, id)
        if key_arn:
            self.key: kms.IKey = kms.Key.from_key_arn(self, "CustomerKey", key_arn)
        else:
            # Retained: deleting it would make every sealed memory unreadable for good.
            self.key = kms.Key(
                self,
                "Key",
                enable_key_rotation=True,
                removal_policy=RemovalPolicy.RETAIN,
                description="Capsule Memory: wraps the tenants' data keys (encryption at rest)",
            )

    def grant(self, functions: Iterable[lambda_.Function]) -> None:
        for fn in functions:
            self.key.grant(fn, *ACTIONS)
