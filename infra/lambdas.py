"""One factory for every Lambda function: Python 3.12 on arm64, the shared layer, its own
log group with a retention, and a role that may write only to that log group."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

RUNTIME = lambda_.Runtime.PYTHON_3_12  # the layer's wheels are built for cp312 (layers/build_layer.py)
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.ONE_MONTH


@dataclass(frozen=True)
class Shared:
    """What every function gets: the code asset, the layer and the environment."""

    code: lambda_.Code
    layer: lambda_.ILayerVersion
    environment: Mapping[str, str]


def python_function(
    scope: Construct,
    id: str,
    shared: Shared,
    *,
    handler: str,
    memory_mb: int,
    timeout_s: int,
    description: str,
    **options,
) -> lambda_.Function:
    """``handler`` is ``module:function`` as in the route table."""
    log_group = logs.LogGroup(scope, f"{id}Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)
    role = iam.Role(
        scope,
        f"{id}Role",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"Runs {id}: writes its own log group, nothing else unless granted",
    )
    # Our own statement instead of AWSLambdaBasicExecutionRole, which may write to every log group.
    role.add_to_policy(
        iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn])
    )
    module, function = handler.split(":")
    return lambda_.Function(
        scope,
        id,
        runtime=RUNTIME,
        architecture=ARCHITECTURE,
        handler=f"{module}.{function}",
        code=shared.code,
        layers=[shared.layer],
        memory_size=memory_mb,
        timeout=Duration.seconds(timeout_s),
        environment=dict(shared.environment),
        log_group=log_group,
        role=role,
        description=description,
        **options,
    )
