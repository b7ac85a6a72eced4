"""Entry point: ``cdk synth`` / ``cdk deploy`` run ``python3 -m infra.app`` (see cdk.json).

Context flags (``-c name=value``): ``layer_zip`` (default build/layer.zip), ``build_dir``
(default build/), ``api_key_auth`` (true: an API-key Lambda authorizer instead of IAM),
``alarm_email`` (subscribe an address to the alarm topic), ``embedder`` (default voyage),
``vector_search_min`` (default 5000: projects this large are searched through Atlas's indexes).
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from .assets import REPO, layer_zip, stage_functions
from .stack import CapsuleStack, StackOptions


def _flag(app: cdk.App, name: str) -> bool:
    return str(app.node.try_get_context(name) or "").lower() in ("1", "true", "yes")


def build_app(app: cdk.App | None = None) -> tuple[cdk.App, CapsuleStack]:
    app = app or cdk.App()
    build_dir = Path(app.node.try_get_context("build_dir") or REPO / "build")
    options = StackOptions(
        functions_asset=stage_functions(build_dir),
        layer_zip=layer_zip(app.node.try_get_context("layer_zip")),
        api_key_auth=_flag(app, "api_key_auth"),
        alarm_email=app.node.try_get_context("alarm_email"),
        embedder=app.node.try_get_context("embedder") or "voyage",
        vector_search_min=int(app.node.try_get_context("vector_search_min") or StackOptions.vector_search_min),
    )
    stack = CapsuleStack(app, "CapsuleMemory", options=options,
                         description="Capsule Memory: long-term memory for AI agents (API, jobs, alarms)")
    # cdk-nag 3.x is a policy-validation plugin: any unacknowledged finding fails the synth.
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
