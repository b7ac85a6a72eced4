"""One factory for every Lambda function: Python 3.12 on arm64, the shared layer, its own
log group with a retention, and a role that may write only to that log group.

Two things a deployment may change (infra/stack.py): where the functions run (``Placement``:
the VPC's private subnets and the functions' security group, infra/atlas_network.py) and which
role a handler runs as (``Shared.roles``: with Atlas's AWS IAM authentication each role is a
database user, so handlers share one role per group, infra/atlas_auth.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

RUNTIME = lambda_.Runtime.PYTHON_3_12  # the layer's wheels are built for cp312 (layers/build_layer.py)
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# What Lambda needs of a function's role to give it a network interface in a VPC (the statement
# of AWSLambdaVPCAccessExecutionRole, without the managed policy's log rights on every group).
VPC_ACCESS_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
)


@dataclass(frozen=True)
class Placement:
    """Where functions run in a VPC: its private subnets and the functions' security group."""

    vpc: ec2.IVpc
    subnets: ec2.SubnetSelection
    security_group: ec2.ISecurityGroup


@dataclass(frozen=True)
class Shared:
    """What every function gets: the code asset, the layer and the environment; where it runs
    (None: outside any VPC) and, by handler, a shared role to run as (others get their own)."""

    code: lambda_.Code
    layer: lambda_.ILayerVersion
    environment: Mapping[str, str]
    placement: Placement | None = None
    roles: Mapping[str, iam.IRole] = field(default_factory=dict)


def vpc_access(role: iam.IRole) -> None:
    """The rights Lambda checks on a VPC function's role; EC2 grants them on no narrower resource."""
    role.add_to_principal_policy(iam.PolicyStatement(actions=list(VPC_ACCESS_ACTIONS), resources=["*"]))
    Validations.of(role).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            reason="Lambda's network-interface rights (AWSLambdaVPCAccessExecutionRole's): EC2 takes no "
            "resource narrower than * for the Describe calls, and Lambda creates the interfaces itself",
        )
    )


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
    # Our own statement instead of AWSLambdaBasicExecutionRole, which may write to every log group.
    writes_logs = iam.PolicyStatement(
        actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[log_group.log_group_arn]
    )
    role = shared.roles.get(handler)
    logs_policy = None
    if role is None:
        role = iam.Role(
            scope,
            f"{id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Runs {id}: writes its own log group, nothing else unless granted",
        )
        role.add_to_principal_policy(writes_logs)
    else:
        # A shared role lives in the main stack: this log group's statement stays beside the
        # function (in its nested stack), or the main stack would wait on the nested one and back.
        logs_policy = iam.Policy(scope, f"{id}LogsPolicy", roles=[role], statements=[writes_logs])
    placement = shared.placement
    if placement is not None:
        vpc_access(role)
        options = {
            "vpc": placement.vpc,
            "vpc_subnets": placement.subnets,
            "security_groups": [placement.security_group],
            **options,
        }
    module, function = handler.split(":")
    fn = lambda_.Function(
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
    if logs_policy is not None:
        fn.node.add_dependency(logs_policy)
    return fn
