"""The per-tenant usage options of a deployment (functions/metering.py): the tenant metric and the
rate limit reach every function's environment, off by default, read strictly from the context."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from infra.app import options_from
from tests.infra.conftest import stub_layer


def _options(tmp_path, **context):
    app = cdk.App(
        outdir=str(tmp_path / "out"),
        context={"layer_zip": stub_layer(tmp_path / "layer.zip"), "build_dir": str(tmp_path / "build"), **context},
    )
    return options_from(app)


def test_every_function_gets_the_usage_settings_off_by_default(template):
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    routed = [f for f in functions if "CAPSULE_STORE" in f["Properties"]["Environment"]["Variables"]]
    assert routed
    for function in routed:
        variables = function["Properties"]["Environment"]["Variables"]
        assert (variables["CAPSULE_TENANT_METRICS"], variables["CAPSULE_TENANT_RATE_LIMIT"]) == ("false", "0")


def test_the_usage_settings_are_set_per_deployment(tmp_path):
    options = _options(tmp_path, tenant_metrics="true", tenant_rate_limit="600")
    assert (options.tenant_metrics, options.tenant_rate_limit) == (True, 600)
    default = _options(tmp_path)
    assert (default.tenant_metrics, default.tenant_rate_limit) == (False, 0)


@pytest.mark.parametrize(
    "context, named",
    [
        ({"tenant_metrics": "sometimes"}, "tenant_metrics"),
        ({"tenant_rate_limit": "fast"}, "tenant_rate_limit"),
        ({"tenant_rate_limit": "0"}, "tenant_rate_limit"),  # unset is no limit; 0 is not a limit
        ({"tenant_rate_limit": 2_000_000}, "tenant_rate_limit"),
    ],
)
def test_a_bad_usage_option_is_refused_by_name(tmp_path, context, named):
    with pytest.raises(SystemExit, match=named):
        _options(tmp_path, **context)
