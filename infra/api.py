"""The HTTP API: one Lambda function per entry of the route table (functions/routes.py).

Every authenticated route uses IAM authorization (SigV4, the caller's AWS identity is the
tenant), or, with the ``api_key_auth`` context flag, a Lambda authorizer that checks an API
key against the hashes kept in the deployment's secret.
"""

from __future__ import annotations

from dataclasses import dataclass

import jsii
from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from functions.routes import ROUTES, Route

from .lambdas import LOG_RETENTION, Shared, python_function

AUTHORIZER_HANDLER = "functions.authorizer:handler"


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


class CapsuleApi(Construct):
    def __init__(self, scope: Construct, id: str, *, shared: Shared, secret: secretsmanager.ISecret,
                 api_key_auth: bool, throttle: Throttle = Throttle()) -> None:
        super().__init__(scope, id)
        self.functions: dict[str, lambda_.Function] = {}
        authorizer = self._authorizer(shared, secret) if api_key_auth else authorizers.HttpIamAuthorizer()
        self.http_api = apigwv2.HttpApi(
            self, "HttpApi", api_name="capsule-memory", create_default_stage=False,
            description="Capsule Memory HTTP API (the route table in functions/routes.py)",
        )
        self.access_logs = logs.LogGroup(self, "AccessLogs", retention=LOG_RETENTION)
        self.stage = self._stage(throttle)
        for route in ROUTES:
            self._add_route(route, shared, secret, authorizer)

    def _authorizer(self, shared: Shared, secret: secretsmanager.ISecret) -> apigwv2.IHttpRouteAuthorizer:
        fn = python_function(self, "ApiKeyAuthorizer", shared, handler=AUTHORIZER_HANDLER, memory_mb=256,
                             timeout_s=5, description="Checks an API key against the hashes in the secret")
        secret.grant_read(fn)
        self.functions["authorizer"] = fn
        return authorizers.HttpLambdaAuthorizer(
            "ApiKey", fn, identity_source=["$request.header.Authorization"],
            response_types=[authorizers.HttpLambdaResponseType.SIMPLE], results_cache_ttl=Duration.minutes(5),
        )

    def _stage(self, throttle: Throttle) -> apigwv2.HttpStage:
        return apigwv2.HttpStage(
            self, "DefaultStage", http_api=self.http_api, stage_name="$default", auto_deploy=True,
            throttle=apigwv2.ThrottleSettings(rate_limit=throttle.rate, burst_limit=throttle.burst),
            access_log_settings=_AccessLogs(
                apigwv2.LogGroupLogDestination(self.access_logs),
                apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True, http_method=True, ip=True, protocol=True, request_time=True,
                    resource_path=True, response_length=True, status=True, user=True,
                ),
            ),
        )

    def _add_route(self, route: Route, shared: Shared, secret: secretsmanager.ISecret,
                   authorizer: apigwv2.IHttpRouteAuthorizer) -> None:
        fn = python_function(
            self, logical_name(route.name), shared, handler=route.handler, memory_mb=route.memory_mb,
            timeout_s=route.timeout_s, description=f"{route.method} {route.path}",
        )
        if route.auth:  # the public document needs no store and no secret
            secret.grant_read(fn)
        self.functions[route.name] = fn
        self.http_api.add_routes(
            path=route.path, methods=[apigwv2.HttpMethod(route.method)],
            integration=integrations.HttpLambdaIntegration(f"{logical_name(route.name)}Integration", fn),
            authorizer=authorizer if route.auth else apigwv2.HttpNoneAuthorizer(),
        )
