"""Who hears the alarms, chosen at deploy (infra/alarm_choice.py), and the AWS paths of the
alarms and scheduled jobs run against moto's APIs (in-process, no network): the synthesized
alarm topic (its key, its policy, a subscription) takes a CloudWatch alarm's message; the
synthesized schedules are accepted by EventBridge with their targets, retries and dead letters,
and the event they send is one the jobs' handlers read; the layer asset the stack points at is
published by Lambda from S3 as a deploy does."""

from __future__ import annotations

import json
import zipfile

import pytest

from infra import alarm_choice
from tests.support.moto_aws import mocked_aws

# ---- the choice --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("ops@example.com", "ops@example.com"), (" ops@example.com ", "ops@example.com"), ("none", None), ("NONE", None)],
)
def test_an_address_or_none(value, expected):
    assert alarm_choice.address(value, required=True) == expected


@pytest.mark.parametrize("value", ["ops", "ops@example", "a@b.com,c@d.com", "a b@c.com", 3])
def test_anything_else_is_refused_naming_the_flag(value):
    with pytest.raises(SystemExit, match="alarm_email"):
        alarm_choice.address(value)


def test_unset_is_refused_only_where_required():
    assert alarm_choice.address(None) is None
    with pytest.raises(SystemExit, match="alarm_email=none"):
        alarm_choice.address(None, required=True)
    with pytest.raises(SystemExit, match="alarm_email is required"):
        alarm_choice.address("", required=True)


def test_cdk_synth_without_a_choice_stops_before_building(monkeypatch, tmp_path):
    pytest.importorskip("aws_cdk", reason="aws-cdk-lib is in the 'infra' extra")
    import aws_cdk as cdk

    from infra import app as infra_app

    built, real_app = [], cdk.App
    monkeypatch.setattr(infra_app, "build_app", lambda *a: built.append(a))

    def cdk_app_with(context):  # what `cdk synth -c ...` hands the app
        monkeypatch.setattr(infra_app.cdk, "App", lambda: real_app(outdir=str(tmp_path), context=context))

    cdk_app_with({"layer_zip": "x.zip"})
    with pytest.raises(SystemExit, match="alarm_email is required"):
        infra_app.main()
    cdk_app_with({"alarm_email": "ops@"})
    with pytest.raises(SystemExit, match="expected an email address"):
        infra_app.main()
    assert built == []


def _alarms_template(email):
    import aws_cdk as cdk
    from aws_cdk.assertions import Template

    from infra.monitoring import Alarms

    stack = cdk.Stack(cdk.App(), "AlarmsOnly")
    Alarms(stack, "Alarms", alarm_email=email)
    return Template.from_stack(stack).to_json()


@pytest.fixture(scope="module")
def subscribed():
    pytest.importorskip("aws_cdk", reason="aws-cdk-lib is in the 'infra' extra")
    return _alarms_template("ops@example.com")


def test_an_address_is_subscribed_and_the_topic_is_an_output(subscribed):
    subs = [r["Properties"] for r in subscribed["Resources"].values() if r["Type"] == "AWS::SNS::Subscription"]
    assert [(s["Protocol"], s["Endpoint"]) for s in subs] == [("email", "ops@example.com")]
    assert "ops@example.com" in subscribed["Outputs"]["AlarmTopicArn"]["Description"]


def test_declined_subscribes_no_one_and_says_so():
    pytest.importorskip("aws_cdk", reason="aws-cdk-lib is in the 'infra' extra")
    declined = _alarms_template(None)
    assert not [r for r in declined["Resources"].values() if r["Type"] == "AWS::SNS::Subscription"]
    assert "alarm_email=none" in declined["Outputs"]["AlarmTopicArn"]["Description"]


# ---- moto: the template's resources as the AWS APIs take them ----------------------------

moto = pytest.importorskip("moto", reason="moto is in the 'dev' extra")
boto3 = pytest.importorskip("boto3", reason="boto3 is in the 'aws' extra")

REGION, ACCOUNT = "us-east-1", "123456789012"


@pytest.fixture
def aws(monkeypatch):
    with mocked_aws(monkeypatch, REGION):
        yield


def resolve(value, names: dict[str, str]):
    """CloudFormation's intrinsics the template's policies use, with ``names`` for its resources."""
    if isinstance(value, list):
        return [resolve(v, names) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        pseudo = {"AWS::AccountId": ACCOUNT, "AWS::Region": REGION, "AWS::Partition": "aws", "AWS::URLSuffix": ""}
        return pseudo.get(value["Ref"]) or names[value["Ref"]]
    if set(value) == {"Fn::GetAtt"}:
        return names[value["Fn::GetAtt"][0]]
    if set(value) == {"Fn::Join"}:
        sep, parts = value["Fn::Join"]
        return sep.join(str(resolve(p, names)) for p in parts)
    return {k: resolve(v, names) for k, v in value.items()}


def _of_type(template, kind):
    return {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == kind}


def test_the_alarm_topic_takes_a_cloudwatch_alarm_through_sns(aws, subscribed):
    """The topic as synthesized: its own KMS key (the key policy as written), the topic policy
    that lets our alarms publish, the email subscription; an alarm's state change published to it."""
    kms, sns, cloudwatch = (boto3.client(s, region_name=REGION) for s in ("kms", "sns", "cloudwatch"))
    ((key_id, key),) = _of_type(subscribed, "AWS::KMS::Key").items()
    ((topic_id, topic),) = _of_type(subscribed, "AWS::SNS::Topic").items()
    made_key = kms.create_key(Policy=json.dumps(resolve(key["KeyPolicy"], {})), Description=key.get("Description", ""))[
        "KeyMetadata"
    ]
    if key.get("EnableKeyRotation"):
        kms.enable_key_rotation(KeyId=made_key["KeyId"])
    arn = sns.create_topic(
        Name="capsule-alarms",
        Attributes={"DisplayName": topic["DisplayName"], "KmsMasterKeyId": made_key["Arn"]},
    )["TopicArn"]
    names = {topic_id: arn, key_id: made_key["Arn"]}
    for policy in _of_type(subscribed, "AWS::SNS::TopicPolicy").values():
        sns.set_topic_attributes(
            TopicArn=arn, AttributeName="Policy", AttributeValue=json.dumps(resolve(policy["PolicyDocument"], names))
        )
    for sub in _of_type(subscribed, "AWS::SNS::Subscription").values():
        sns.subscribe(TopicArn=resolve(sub["TopicArn"], names), Protocol=sub["Protocol"], Endpoint=sub["Endpoint"])
    attributes = sns.get_topic_attributes(TopicArn=arn)["Attributes"]
    assert attributes["KmsMasterKeyId"] == made_key["Arn"]
    assert "CloudWatchAlarmsPublish" in attributes["Policy"]
    assert kms.get_key_rotation_status(KeyId=made_key["KeyId"])["KeyRotationEnabled"]
    subs = sns.list_subscriptions_by_topic(TopicArn=arn)["Subscriptions"]
    assert [(s["Protocol"], s["Endpoint"]) for s in subs] == [("email", "ops@example.com")]
    # An alarm wired to the topic, and the message CloudWatch sends when it fires.
    cloudwatch.put_metric_alarm(
        AlarmName="Capsule5xx",
        MetricName="5xx",
        Namespace="AWS/ApiGateway",
        Statistic="Sum",
        Period=300,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
        AlarmActions=[arn],
    )
    (alarm,) = cloudwatch.describe_alarms(AlarmNames=["Capsule5xx"])["MetricAlarms"]
    assert alarm["AlarmActions"] == [arn]
    message = {"AlarmName": "Capsule5xx", "NewStateValue": "ALARM", "NewStateReason": "Threshold Crossed"}
    sns.publish(TopicArn=arn, Subject="ALARM: Capsule5xx", Message=json.dumps(message))
    from moto.sns.models import sns_backends

    sent = sns_backends[ACCOUNT][REGION].topics[arn].sent_notifications
    assert len(sent) == 1 and json.loads(sent[0][1])["NewStateValue"] == "ALARM"


@pytest.fixture(scope="module")
def stack_template(request):
    pytest.importorskip("aws_cdk", reason="aws-cdk-lib is in the 'infra' extra")
    return request.getfixturevalue("template")


def test_the_schedules_are_accepted_by_eventbridge_and_their_event_is_read_by_the_jobs(aws, stack_template):
    from functions import jobs as job_handlers
    from infra.jobs import JOBS

    events, sqs = boto3.client("events", region_name=REGION), boto3.client("sqs", region_name=REGION)
    rules = _of_type(stack_template, "AWS::Events::Rule")
    assert len(rules) == len(JOBS)
    functions = _of_type(stack_template, "AWS::Lambda::Function")
    queues = _of_type(stack_template, "AWS::SQS::Queue")
    names = {fid: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{fid}" for fid in functions}
    for qid in queues:
        url = sqs.create_queue(QueueName=qid[:80])["QueueUrl"]
        names[qid] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    handlers = {}
    for rule_id, rule in rules.items():
        events.put_rule(
            Name=rule_id[:64],
            ScheduleExpression=rule["ScheduleExpression"],
            State=rule.get("State", "ENABLED"),
            Description=rule["Description"],
        )
        targets = [
            {
                "Id": t["Id"],
                "Arn": resolve(t["Arn"], names),
                "RetryPolicy": t["RetryPolicy"],
                "DeadLetterConfig": {"Arn": resolve(t["DeadLetterConfig"]["Arn"], names)},
            }
            for t in rule["Targets"]
        ]
        assert events.put_targets(Rule=rule_id[:64], Targets=targets)["FailedEntryCount"] == 0
        (target,) = events.list_targets_by_rule(Rule=rule_id[:64])["Targets"]
        assert target["RetryPolicy"]["MaximumRetryAttempts"] == 4
        function_id = target["Arn"].rsplit(":", 1)[1]
        handlers[rule_id] = functions[function_id]["Handler"]
    listed = events.list_rules()["Rules"]
    assert sorted(r["ScheduleExpression"] for r in listed) == sorted(r["ScheduleExpression"] for r in rules.values())
    # Every job's handler is a schedule's target, and reads the event a schedule sends.
    assert sorted(handlers.values()) == sorted(job.handler.replace(":", ".") for job in JOBS)
    scheduled = {
        "version": "0",
        "id": "89d1a02d-5ec7-412e-82f5-13505f849b41",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT,
        "time": "2026-12-03T10:00:00Z",
        "region": REGION,
        "resources": [f"arn:aws:events:{REGION}:{ACCOUNT}:rule/x"],
        "detail": {},
    }
    for job in JOBS:
        name = job.handler.rsplit(":", 1)[1].removesuffix("_handler")
        assert callable(getattr(job_handlers, f"{name}_handler"))
        assert job_handlers._budget(name, scheduled) == {}  # a schedule's own keys are no budget


def test_the_layer_asset_is_published_from_s3_as_a_deploy_does(aws, tmp_path):
    """cdk deploy uploads the layer zip to the bootstrap bucket; CloudFormation then publishes the
    layer from that bucket and key. The same calls against moto, with a zip as the layer builds it."""
    from tests.infra.conftest import stub_layer

    layer = stub_layer(tmp_path / "layer.zip")
    assert zipfile.is_zipfile(layer)
    s3, lam = boto3.client("s3", region_name=REGION), boto3.client("lambda", region_name=REGION)
    bucket = f"cdk-hnb659fds-assets-{ACCOUNT}-{REGION}"
    s3.create_bucket(Bucket=bucket)
    with open(layer, "rb") as handle:
        s3.put_object(Bucket=bucket, Key="0123abcd.zip", Body=handle.read())
    published = lam.publish_layer_version(
        LayerName="CapsuleLibrary",
        Content={"S3Bucket": bucket, "S3Key": "0123abcd.zip"},
        CompatibleRuntimes=["python3.12"],
    )
    assert published["Version"] == 1 and published["Content"]["CodeSize"] > 0
