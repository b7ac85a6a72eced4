"""Entry point: ``cdk synth`` / ``cdk deploy`` run ``python3 -m infra.app`` (see cdk.json).

Context flags (``-c name=value``): ``layer_zip`` (default build/layer.zip), ``build_dir``
(default build/), ``api_key_auth`` (true: an API-key Lambda authorizer instead of IAM),
``alarm_email`` (subscribe an address to the alarm topic), ``embedder`` (voyage, the default,
openai, minilm or hashing: the layer must have been built for it, see layers/build_layer.py),
``throttle_rate`` / ``throttle_burst`` (the stage's requests/s and burst, default 200 / 400),
``tenant_per_session`` (true: one tenant per assumed-role session instead of per role),
``vector_search_min`` (default 5000: projects this large are searched through Atlas's indexes).
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from . import context
from .api import Throttle
from .assets import REPO, check_layer_runs, layer_zip, stage_functions
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
    return StackOptions(
        functions_asset=stage_functions(build_dir),
        layer_zip=zip_path,
        api_key_auth=context.flag(get("api_key_auth"), "api_key_auth"),
        alarm_email=get("alarm_email"),
        embedder=embedder,
        throttle=throttle,
        tenant_per_session=context.flag(get("tenant_per_session"), "tenant_per_session"),
        vector_search_min=context.positive_int(
            get("vector_search_min"), "vector_search_min", StackOptions.vector_search_min, maximum=10_000_000
        ),
        kms_key_arn=context.kms_key_arn(get("kms_key_arn")),
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
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
