"""What a first deploy on a new account needs (aws_cdk.assertions on the synthesized stack):
alarms that can reach the topic, no reserved concurrency, throttling set per deployment with
alarms on 4xx and 429, and the context values read strictly."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from capsule.jobs.scheduled import LEASE_SECONDS
from infra.app import options_from
from infra.jobs import JOBS
from tests.infra.conftest import stub_layer


@pytest.fixture(scope="module")
def assertions(template) -> Template:
    return Template.from_json(template)


OUR_ALARMS = {
    "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
    "ArnLike": {
        "aws:SourceArn": {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":cloudwatch:",
                    {"Ref": "AWS::Region"},
                    ":",
                    {"Ref": "AWS::AccountId"},
                    ":alarm:*",
                ],
            ]
        }
    },
}


def test_the_alarm_topic_uses_our_key_and_cloudwatch_may_use_it(assertions, template):
    # The other key wraps the tenants' data keys (infra/datakeys.py, tests/infra/test_data_keys.py).
    (key_id,) = [
        k
        for k, v in assertions.find_resources("AWS::KMS::Key").items()
        if "data keys" not in v["Properties"].get("Description", "")
    ]
    assertions.has_resource_properties(
        "AWS::KMS::Key",
        {
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                                "Action": ["kms:GenerateDataKey*", "kms:Decrypt"],
                                "Resource": "*",
                                "Condition": OUR_ALARMS,
                            }
                        )
                    ]
                )
            },
        },
    )
    (topic_id,) = assertions.find_resources(
        "AWS::SNS::Topic", {"Properties": {"KmsMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]}}}
    )
    assert "alias/aws/sns" not in str(template)


def test_the_topic_policy_lets_our_alarms_publish_over_tls_only(assertions):
    """The topic's policy replaces SNS's default one: without an allow, alarms cannot publish."""
    (topic_id,) = assertions.find_resources("AWS::SNS::Topic")
    (policy,) = assertions.find_resources("AWS::SNS::TopicPolicy").values()
    assert policy["Properties"]["Topics"] == [{"Ref": topic_id}]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    allow = [s for s in statements if s["Effect"] == "Allow"]
    assert allow == [
        {
            "Sid": "CloudWatchAlarmsPublish",
            "Effect": "Allow",
            "Action": "sns:Publish",
            "Principal": {"Service": "cloudwatch.amazonaws.com"},
            "Resource": {"Ref": topic_id},
            "Condition": OUR_ALARMS,
        }
    ]
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_no_function_reserves_concurrency_and_the_lease_outlasts_every_job(assertions):
    for props in assertions.find_resources("AWS::Lambda::Function").values():
        assert "ReservedConcurrentExecutions" not in props["Properties"]
    assert all(job.timeout_s <= LEASE_SECONDS for job in JOBS)  # a run never outlives its lease


def test_the_stage_carries_100_requests_a_second_with_bursts_by_default(assertions):
    assertions.has_resource_properties(
        "AWS::ApiGatewayV2::Stage",
        {
            "DefaultRouteSettings": {"ThrottlingRateLimit": 200, "ThrottlingBurstLimit": 400},
        },
    )


def test_4xx_and_429_rates_raise_alarms(assertions):
    (filter_props,) = [r["Properties"] for r in assertions.find_resources("AWS::Logs::MetricFilter").values()]
    assert filter_props["FilterPattern"] == '{ $.status = "429" }'
    assert filter_props["MetricTransformations"] == [
        {"DefaultValue": 0, "MetricName": "Api429", "MetricNamespace": "CapsuleMemory", "MetricValue": "1"}
    ]
    stage = next(iter(assertions.find_resources("AWS::ApiGatewayV2::Stage").values()))["Properties"]
    assert stage["AccessLogSettings"]["DestinationArn"]["Fn::GetAtt"][0] == filter_props["LogGroupName"]["Ref"]
    assert '"status":"$context.status"' in stage["AccessLogSettings"]["Format"]  # what the filter reads
    alarms = assertions.find_resources("AWS::CloudWatch::Alarm")
    by_name = {k: v["Properties"] for k, v in alarms.items()}
    for name, metric_name, threshold in (("Api4xxRate", "4xx", 25), ("Api429Rate", "Api429", 1)):
        (props,) = [p for k, p in by_name.items() if k.startswith(f"Alarms{name}")]
        metrics = {m.get("MetricStat", {}).get("Metric", {}).get("MetricName") for m in props["Metrics"]}
        assert {metric_name, "Count"} <= metrics and props["Threshold"] == threshold
        assert props["AlarmActions"]


def test_functions_get_the_tenancy_option(assertions):
    for props in assertions.find_resources("AWS::Lambda::Function").values():
        assert props["Properties"]["Environment"]["Variables"]["CAPSULE_TENANT_PER_SESSION"] == "false"


def _options(tmp_path, **context):
    layer = context.pop("layer", None) or stub_layer(tmp_path / "layer.zip")
    app = cdk.App(
        outdir=str(tmp_path / "out"), context={"layer_zip": layer, "build_dir": str(tmp_path / "build"), **context}
    )
    return options_from(app)


def test_throttling_and_tenancy_are_set_per_deployment(tmp_path):
    options = _options(tmp_path, throttle_rate="500", throttle_burst=1000, tenant_per_session="true")
    assert (options.throttle.rate, options.throttle.burst, options.tenant_per_session) == (500, 1000, True)
    assert _options(tmp_path).throttle.rate == 200 and _options(tmp_path).tenant_per_session is False


@pytest.mark.parametrize(
    "context, named",
    [
        ({"throttle_rate": "fast"}, "throttle_rate"),
        ({"throttle_burst": "0"}, "throttle_burst"),
        ({"throttle_rate": 20_000}, "throttle_rate"),
        ({"throttle_rate": True}, "throttle_rate"),
        ({"tenant_per_session": "maybe"}, "tenant_per_session"),
        ({"api_key_auth": "yes please"}, "api_key_auth"),
        ({"embedder": "cohere"}, "embedder"),
    ],
)
def test_a_bad_context_value_is_refused_by_name(tmp_path, context, named):
    with pytest.raises(SystemExit, match=named):
        _options(tmp_path, **context)


def test_an_embedder_the_layer_cannot_run_is_refused_at_synth(tmp_path):
    voyage_only = stub_layer(tmp_path / "voyage.zip", embedders=("hashing", "voyage"))
    with pytest.raises(SystemExit, match="build_layer.py --embedder openai"):
        _options(tmp_path, layer=voyage_only, embedder="openai")
    assert _options(tmp_path, layer=voyage_only, embedder="voyage").embedder == "voyage"
