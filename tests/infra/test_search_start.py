"""Issue 35: the search route's cold start, by choice (``-c search_start``): on demand (the
default fixture), a SnapStart snapshot, or provisioned concurrency; the gateway calls the alias."""

from __future__ import annotations

import pytest

from infra import context
from tests.infra.conftest import merged_template
from tests.infra.test_atlas_network import _synth, of


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ("on-demand", 0)),
        ("on-demand", ("on-demand", 0)),
        ("snapstart", ("snapstart", 0)),
        ("provisioned:2", ("provisioned", 2)),
    ],
)
def test_the_setting_reads_strictly(value, expected):
    assert context.search_start(value) == expected


@pytest.mark.parametrize(
    "value", ["warm", "provisioned", "provisioned:0", "provisioned:101", "provisioned:x", "SnapStart"]
)
def test_a_bad_setting_fails_the_synth_naming_it(value):
    with pytest.raises(SystemExit, match="-c search_start="):
        context.search_start(value)


def _search(template: dict) -> tuple[str, dict]:
    (found,) = [
        (k, v)
        for k, v in of(template, "AWS::Lambda::Function").items()
        if v["Properties"].get("Description") == "POST /v1/memories/search"
    ]
    return found


def _integration_target(template: dict) -> object:
    (integration,) = [
        v
        for v in of(template, "AWS::ApiGatewayV2::Integration").values()
        if "Search" in str(v["Properties"]["IntegrationUri"])
        and "SolutionSearch" not in str(v["Properties"]["IntegrationUri"])
    ]
    return integration["Properties"]["IntegrationUri"]


def test_on_demand_is_the_default(synthesized):
    template = merged_template(*synthesized)
    _, function = _search(template)
    assert "SnapStart" not in function["Properties"]
    assert not [a for a in of(template, "AWS::Lambda::Alias").values() if "Search" in str(a)]


def test_snapstart_snapshots_a_published_version_the_gateway_calls(tmp_path_factory):
    template = merged_template(*_synth(tmp_path_factory, "snapstart", search_start="snapstart"))
    search_id, function = _search(template)
    assert function["Properties"]["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    ((alias_id, alias),) = [(k, v) for k, v in of(template, "AWS::Lambda::Alias").items() if search_id in str(v)]
    assert "ProvisionedConcurrencyConfig" not in alias["Properties"]
    assert alias_id in str(_integration_target(template))


def test_provisioned_keeps_environments_warm_behind_the_alias(tmp_path_factory):
    template = merged_template(*_synth(tmp_path_factory, "provisioned", search_start="provisioned:2"))
    search_id, function = _search(template)
    assert "SnapStart" not in function["Properties"]
    ((alias_id, alias),) = [(k, v) for k, v in of(template, "AWS::Lambda::Alias").items() if search_id in str(v)]
    assert alias["Properties"]["ProvisionedConcurrencyConfig"] == {"ProvisionedConcurrentExecutions": 2}
    assert alias_id in str(_integration_target(template))
