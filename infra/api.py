"""The HTTP API: one Lambda function per entry of the route table (functions/routes.py).

The API, its stage and its authorizer live in the main stack; each route's function, role,
log group, integration, route and invoke permission (7 resources, plus its alarms) live in one
of :data:`ROUTE_STACKS` nested stacks, so the main stack stays far from CloudFormation's 500
resources and a new route costs its nested stack 9. A route's nested stack is chosen by a hash
of its name, so adding a route never moves another one (moving it would replace its function).

Every authenticated route uses IAM authorization (SigV4, the caller's AWS identity is the
tenant), or, with the ``api_key_auth`` context flag, a Lambda authorizer that checks an API
key against the hashes kept in the deployment's secret.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace
from pathlib import Path

import jsii
from aws_cdk import Aws, Duration, NestedStack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from functions.routes import GATEWAY_TIMEOUT_S, ROUTES, Route

from .lambdas import LOG_RETENTION, Shared, python_function

AUTHORIZER_HANDLER = "functions.authorizer:handler"
PUBLIC_RATE, PUBLIC_BURST = 5, 10  # requests/s for each unauthenticated route (a document fetched once)
ROUTE_STACKS = 4  # 43 routes: 6 to 13 a stack (at most 106 resources); each holds 15 more before 250


def route_stack_of(name: str) -> int:
    """The nested stack (0 to ROUTE_STACKS - 1) that holds the route ``name``: a hash of the name
    alone, so it never changes when other routes come or go."""
    return zlib.crc32(name.encode()) % ROUTE_STACKS


SEARCH_ROUTE = "search"  # the route -c search_start applies to


@dataclass(frozen=True)
class Throttle:
    """The stage's steady rate (requests/s) and burst (the token bucket's size).

    The defaults carry 100 requests/s with room for twice that in bursts; a deployment sets
    its own with ``-c throttle_rate=N -c throttle_burst=N`` (the Api429Rate alarm says when
    they are too low). The account's regional limit (10,000/s by default) stays above them."""

    rate: int = 200
    burst: int = 400


@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLogs:
    """IAccessLogSettings is a jsii interface, not a struct: it needs an implementing object."""

    def __init__(self, destination: apigwv2.IAccessLogDestination, format: apigw.AccessLogFormat) -> None:
        self._destination, self._format = destination, format

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw.AccessLogFormat:
        return self._format


def logical_name(name: str) -> str:
    """``project_settings`` -> ``ProjectSettings``: the construct id of a route's function."""
    return "".join(part.capitalize() for part in name.split("_"))


@jsii.implements(apigwv2.IHttpRouteAuthorizer)
class _SharedAuthorizer:
    """One authorizer resource of the main stack, used by routes of every nested stack (the
    stock HttpLambdaAuthorizer creates its resource beside the first route that binds it)."""

    def __init__(self, authorizer: apigwv2.IHttpAuthorizer) -> None:
        self._authorizer = authorizer

    def bind(self, *, route: apigwv2.IHttpRoute, scope: Construct) -> apigwv2.HttpRouteAuthorizerConfig:
        return apigwv2.HttpRouteAuthorizerConfig(
            authorization_type="CUSTOM", authorizer_id=self._authorizer.authorizer_id
        )


class CapsuleApi(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        shared: Shared,
        secret: secretsmanager.ISecret,
        api_key_auth: bool,
        throttle: Throttle = Throttle(),
        functions_asset: Path | None = None,
        search_start: tuple[str, int] = ("on-demand", 0),
    ) -> None:
        super().__init__(scope, id)
        self.search_start = search_start
        self.functions: dict[str, lambda_.Function] = {}
        self.routes: dict[str, apigwv2.HttpRoute] = {}
        self.http_api = apigwv2.HttpApi(
            self,
            "HttpApi",
            api_name="capsule-memory",
            create_default_stage=False,
            description="Capsule Memory HTTP API (the route table in functions/routes.py)",
        )
        authorizer = self._authorizer(shared, secret) if api_key_auth else authorizers.HttpIamAuthorizer()
        self.access_logs = logs.LogGroup(self, "AccessLogs", retention=LOG_RETENTION)
        self.stage = self._stage(throttle)
        self.route_stacks = [
            NestedStack(self, f"Routes{n}", description=f"Capsule Memory routes, share {n}")
            for n in range(ROUTE_STACKS)
        ]
        # A code asset binds to one stack: each nested stack gets its own (the same file in S3).
        shares = [
            shared if functions_asset is None else replace(shared, code=lambda_.Code.from_asset(str(functions_asset)))
            for _ in self.route_stacks
        ]
        for route in ROUTES:
            n = route_stack_of(route.name)
            self._add_route(self.route_stacks[n], route, shares[n], secret, authorizer)
        self._public_budget()

    def _public_budget(self) -> None:
        """Unauthenticated routes (the OpenAPI document) get a small throttle of their own: a
        flood of them is refused there, not out of the stage's budget every tenant shares. The
        stage names the route by key, so it is deployed after the nested stacks that hold them."""
        public = [route for route in ROUTES if not route.auth]
        stage = self.stage.node.default_child
        stage.add_property_override(
            "RouteSettings",
            {
                f"{route.method} {route.path}": {
                    "ThrottlingRateLimit": PUBLIC_RATE,
                    "ThrottlingBurstLimit": PUBLIC_BURST,
                }
                for route in public
            },
        )
        for n in {route_stack_of(route.name) for route in public}:
            stage.node.add_dependency(self.route_stacks[n])

    def _authorizer(self, shared: Shared, secret: secretsmanager.ISecret) -> apigwv2.IHttpRouteAuthorizer:
        fn = python_function(
            self,
            "ApiKeyAuthorizer",
            shared,
            handler=AUTHORIZER_HANDLER,
            memory_mb=256,
            timeout_s=5,
            description="Checks an API key against the hashes in the secret",
        )
        secret.grant_read(fn)
        self.functions["authorizer"] = fn
        resource = apigwv2.HttpAuthorizer(
            self,
            "ApiKey",
            http_api=self.http_api,
            authorizer_name="ApiKey",
            type=apigwv2.HttpAuthorizerType.LAMBDA,
            identity_source=["$request.header.Authorization"],
            authorizer_uri=(
                f"arn:{Aws.PARTITION}:apigateway:{Aws.REGION}:lambda:path/2015-03-31/functions/"
                f"{fn.function_arn}/invocations"
            ),
            enable_simple_responses=True,
            payload_format_version=apigwv2.AuthorizerPayloadVersion.VERSION_2_0,
            results_cache_ttl=Duration.minutes(5),
        )
        fn.add_permission(
            "ApiGatewayInvokesTheAuthorizer",
            principal=iam.ServicePrincipal("apigateway.amazonaws.com"),
            source_arn=(
                f"arn:{Aws.PARTITION}:execute-api:{Aws.REGION}:{Aws.ACCOUNT_ID}:"
                f"{self.http_api.api_id}/authorizers/{resource.authorizer_id}"
            ),
        )
        return _SharedAuthorizer(resource)

    def _stage(self, throttle: Throttle) -> apigwv2.HttpStage:
        return apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(rate_limit=throttle.rate, burst_limit=throttle.burst),
            access_log_settings=_AccessLogs(
                apigwv2.LogGroupLogDestination(self.access_logs),
                apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
            ),
        )

    def _add_route(
        self,
        scope: Construct,
        route: Route,
        shared: Shared,
        secret: secretsmanager.ISecret,
        authorizer: apigwv2.IHttpRouteAuthorizer,
    ) -> None:
        name = logical_name(route.name)
        fn = python_function(
            scope,
            name,
            shared,
            handler=route.handler,
            memory_mb=route.memory_mb,
            timeout_s=route.timeout_s,
            description=f"{route.method} {route.path}",
        )
        if route.auth:  # the public document needs no store and no secret
            secret.grant_read(fn)
        self.functions[route.name] = fn
        target = self._started(scope, name, fn) if route.name == SEARCH_ROUTE else fn
        self.routes[route.name] = apigwv2.HttpRoute(
            scope,
            f"{name}Route",
            http_api=self.http_api,
            route_key=apigwv2.HttpRouteKey.with_(route.path, apigwv2.HttpMethod(route.method)),
            # The gateway's own limit, said outright: the function's timeout is below it (functions/routes.py).
            integration=integrations.HttpLambdaIntegration(
                f"{name}Integration", target, timeout=Duration.seconds(GATEWAY_TIMEOUT_S)
            ),
            authorizer=authorizer if route.auth else apigwv2.HttpNoneAuthorizer(),
        )

    def _started(self, scope: Construct, name: str, fn: lambda_.Function) -> lambda_.IFunction:
        """The search function as the gateway calls it under ``-c search_start``: itself on demand,
        or an alias of a published version that Lambda snapshots (SnapStart) or keeps warm
        (provisioned concurrency). Search is the route whose cold start costs most (numpy, the
        store's client, the embedder's HTTP pool) and the one an agent waits on."""
        kind, count = self.search_start
        if kind == "on-demand":
            return fn
        if kind == "snapstart":
            # A snapshot is taken after the imports; nothing made at import time may be unique
            # to one environment (connections and clients are made at the first request).
            cfn = fn.node.default_child
            assert isinstance(cfn, lambda_.CfnFunction)
            cfn.snap_start = lambda_.CfnFunction.SnapStartProperty(apply_on="PublishedVersions")
            return lambda_.Alias(scope, f"{name}Live", alias_name="live", version=fn.current_version)
        return lambda_.Alias(
            scope,
            f"{name}Live",
            alias_name="live",
            version=fn.current_version,
            provisioned_concurrent_executions=count,
        )
