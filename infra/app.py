"""Entry point: ``cdk synth`` / ``cdk deploy`` run ``python3 -m infra.app`` (see cdk.json).

Context flags (``-c name=value``): ``layer_zip`` (default build/layer.zip), ``build_dir``
(default build/), ``api_key_auth`` (true: an API-key Lambda authorizer instead of IAM),
``alarm_email`` (required by ``cdk synth``/``deploy``: an address to subscribe to the alarm topic, or
``none`` to decline), ``embedder`` (voyage, the default,
openai, minilm or hashing: the layer must have been built for it, see layers/build_layer.py),
``throttle_rate`` / ``throttle_burst`` (the stage's requests/s and burst, default 200 / 400),
``tenant_per_session`` (true: one tenant per assumed-role session instead of per role),
``tenant_metrics`` (true: a CloudWatch metric per tenant and costly operation, functions/metering.py),
``tenant_rate_limit`` (requests a tenant may make a minute; unset: no limit),
``vector_search_min`` (default 5000: projects this large are searched through Atlas's indexes),
``atlas_network`` (privatelink, nat or public: how the functions reach Atlas, infra/atlas_network.py;
privatelink needs ``atlas_endpoint_service``; unset: privatelink if that is given, else public, warned),
``atlas_iam_auth`` (true: the functions sign in to Atlas with their roles, no password: infra/atlas_auth.py),
``secret_rotation_days`` with ``atlas_admin_secret_arn`` (the database password rotated every N days
between two Atlas users, through an Atlas service account kept in that secret: infra/rotation.py).
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from . import alarm_choice, context
from .api import Throttle
from .assets import REPO, check_layer_runs, layer_zip, stage_functions
from .atlas_network import NetworkChoice
from .stack import CapsuleStack, StackOptions

MAX_THROTTLE = 10_000  # API Gateway's default account limit per region


def options_from(app: cdk.App) -> StackOptions:
    get = app.node.try_get_context
    build_dir = Path(get("build_dir") or REPO / "build")
    zip_path = layer_zip(get("layer_zip"))
    embedder = context.embedder(get("embedder"))
    check_layer_runs(zip_path, embedder)
    throttle = Throttle(
        rate=context.positive_int(get("throttle_rate"), "throttle_rate", Throttle.rate, maximum=MAX_THROTTLE),
        burst=context.positive_int(get("throttle_burst"), "throttle_burst", Throttle.burst, maximum=MAX_THROTTLE),
    )
    network = network_choice(get("atlas_network"), get("atlas_endpoint_service"), embedder)
    atlas_iam_auth = context.flag(get("atlas_iam_auth"), "atlas_iam_auth")
    return StackOptions(
        functions_asset=stage_functions(build_dir),
        layer_zip=zip_path,
        api_key_auth=context.flag(get("api_key_auth"), "api_key_auth"),
        alarm_email=alarm_choice.address(get("alarm_email")),
        embedder=embedder,
        throttle=throttle,
        tenant_per_session=context.flag(get("tenant_per_session"), "tenant_per_session"),
        tenant_metrics=context.flag(get("tenant_metrics"), "tenant_metrics"),
        tenant_rate_limit=context.positive_int(get("tenant_rate_limit"), "tenant_rate_limit", 0, maximum=1_000_000),
        vector_search_min=context.positive_int(
            get("vector_search_min"), "vector_search_min", StackOptions.vector_search_min, maximum=10_000_000
        ),
        kms_key_arn=context.kms_key_arn(get("kms_key_arn")),
        network=network,
        atlas_iam_auth=atlas_iam_auth,
        search_start=context.search_start(get("search_start")),
        secret_rotation=context.secret_rotation(
            get("secret_rotation_days"),
            get("atlas_admin_secret_arn"),
            route_out=network.mode == "public" or network.needs_internet,
            atlas_iam_auth=atlas_iam_auth,
        ),
    )


def network_choice(network: object, endpoint_service: object, embedder: str) -> NetworkChoice:
    mode = context.atlas_network(network, endpoint_service)
    return NetworkChoice(
        mode=mode, endpoint_service=context.atlas_endpoint_service(endpoint_service, mode), embedder=embedder
    )


def build_app(app: cdk.App | None = None) -> tuple[cdk.App, CapsuleStack]:
    app = app or cdk.App()
    options = options_from(app)
    stack = CapsuleStack(
        app,
        "CapsuleMemory",
        options=options,
        description="Capsule Memory: long-term memory for AI agents (API, jobs, alarms)",
    )
    # cdk-nag 3.x is a policy-validation plugin: any unacknowledged finding fails the synth.
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


def main() -> None:
    app = cdk.App()
    # A deploy chooses who hears its alarms: an address, or none said out loud (infra/alarm_choice.py).
    alarm_choice.address(app.node.try_get_context("alarm_email"), required=True)
    app, _ = build_app(app)
    app.synth()


if __name__ == "__main__":
    main()
