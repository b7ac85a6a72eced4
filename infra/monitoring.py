"""Alarms: the API's 5xx, 4xx and 429 rates, and per function its throttles, its errors (jobs)
and its duration near the timeout. They notify one SNS topic (encrypted, TLS only).

A function's alarms live in the function's own stack (the routes' nested stacks, infra/api.py),
so the main stack does not grow with the route table; throttles are summed over up to 10
functions an alarm (CloudWatch's most metrics in one alarm), one resource instead of ten.

The topic is encrypted with a key of our own: the AWS-managed ``alias/aws/sns`` key's policy
cannot be changed, does not let CloudWatch use it, and an alarm's publish to a topic under it
fails silently (the alarm changes state, nobody is told). Our key's policy lets
``cloudwatch.amazonaws.com`` generate the data key and decrypt, which is what publishing needs.
The topic's own policy (the TLS-only deny) replaces SNS's default one, which let the account's
alarms publish, so it allows CloudWatch to publish too. Both grants hold only for alarms of
this account and region (``aws:SourceAccount``, ``aws:SourceArn``): no confused deputy.

API Gateway's HTTP API has no metric for 429 alone (it counts it in ``4xx``), so a metric
filter on the access log counts the requests the stage throttled.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Aws, CfnOutput, Duration, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

FIVE_MINUTES = Duration.minutes(5)
SERVER_ERROR_RATE_PERCENT = 1.0
# Bad requests and refused signatures are normal in small numbers; a quarter of all requests
# over 10 minutes is a broken client, a bad deploy or a probe.
CLIENT_ERROR_RATE_PERCENT = 25.0
THROTTLED_RATE_PERCENT = 1.0  # any sustained throttling means the stage limits are too low
METRIC_NAMESPACE = "CapsuleMemory"
THROTTLED_METRIC = "Api429"
DURATION_SHARE_OF_TIMEOUT = 0.8
MAX_ALARM_METRICS = 10  # CloudWatch: the metrics one alarm's math may read


CLOUDWATCH = iam.ServicePrincipal("cloudwatch.amazonaws.com")


def _from_our_alarms() -> dict:
    return {
        "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
        "ArnLike": {"aws:SourceArn": f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"},
    }


class Alarms(Construct):
    def __init__(self, scope: Construct, id: str, *, alarm_email: str | None) -> None:
        super().__init__(scope, id)
        self.key = kms.Key(
            self,
            "TopicKey",
            enable_key_rotation=True,
            description="Encrypts the Capsule Memory alarm topic; CloudWatch may use it to publish",
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsUseTheKey",
                principals=[CLOUDWATCH],
                conditions=_from_our_alarms(),
                actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                resources=["*"],  # "*" in a key policy: this key
            )
        )
        self.topic = sns.Topic(
            self, "Topic", display_name="Capsule Memory alarms", enforce_ssl=True, master_key=self.key
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[CLOUDWATCH],
                conditions=_from_our_alarms(),
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
            )
        )
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        # Who hears the alarms, chosen at synth (infra/alarm_choice.py): subscribe more to this topic.
        CfnOutput(
            Stack.of(self),
            "AlarmTopicArn",
            value=self.topic.topic_arn,
            description=f"The alarm topic; subscribed at deploy: {alarm_email}"
            if alarm_email
            else "The alarm topic; no one was subscribed at deploy (-c alarm_email=none): subscribe here",
        )
        self.alarms: list[cloudwatch.Alarm] = []

    def _alarm(self, id: str, scope: Construct | None = None, **props) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            scope or self,
            id,
            evaluation_periods=props.pop("evaluation_periods", 1),
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            **props,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.alarms.append(alarm)
        return alarm

    def api(self, http_api: apigwv2.HttpApi, access_logs: logs.ILogGroup) -> None:
        requests = http_api.metric_count(period=FIVE_MINUTES, statistic="Sum")
        throttled = logs.MetricFilter(
            self,
            "Api429Filter",
            log_group=access_logs,
            metric_namespace=METRIC_NAMESPACE,
            metric_name=THROTTLED_METRIC,
            filter_pattern=logs.FilterPattern.string_value("$.status", "=", "429"),
            metric_value="1",
            default_value=0,
        ).metric(period=FIVE_MINUTES, statistic="Sum")
        for id, label, errors, threshold, periods, text in (
            (
                "Api5xxRate",
                "5xx %",
                http_api.metric_server_error(period=FIVE_MINUTES, statistic="Sum"),
                SERVER_ERROR_RATE_PERCENT,
                2,
                "More than 1% of API requests failed with a 5xx over 10 minutes",
            ),
            (
                "Api4xxRate",
                "4xx %",
                http_api.metric_client_error(period=FIVE_MINUTES, statistic="Sum"),
                CLIENT_ERROR_RATE_PERCENT,
                2,
                "More than 25% of API requests were refused with a 4xx over 10 minutes",
            ),
            (
                "Api429Rate",
                "429 %",
                throttled,
                THROTTLED_RATE_PERCENT,
                2,
                "More than 1% of API requests were throttled (429) over 10 minutes: raise throttle_rate/throttle_burst",
            ),
        ):
            rate = cloudwatch.MathExpression(
                expression="IF(requests > 0, 100 * errors / requests, 0)",
                using_metrics={"errors": errors, "requests": requests},
                label=label,
                period=FIVE_MINUTES,
            )
            self._alarm(
                id,
                metric=rate,
                threshold=threshold,
                evaluation_periods=periods,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                alarm_description=text,
            )

    def functions(self, functions: Mapping[str, lambda_.Function], *, timeouts_s: Mapping[str, int]) -> None:
        by_stack: dict[Stack, list[tuple[str, lambda_.Function]]] = {}
        for name, fn in functions.items():
            by_stack.setdefault(Stack.of(fn), []).append((name, fn))
        for stack, members in by_stack.items():
            scope = self._scope_in(stack)
            for start in range(0, len(members), MAX_ALARM_METRICS):
                group = members[start : start + MAX_ALARM_METRICS]
                names = ", ".join(name for name, _ in group)
                throttles = cloudwatch.MathExpression(
                    expression="SUM(METRICS())",
                    label="throttles",
                    period=FIVE_MINUTES,
                    using_metrics={
                        f"t{n}": fn.metric_throttles(period=FIVE_MINUTES, statistic="Sum")
                        for n, (_, fn) in enumerate(group)
                    },
                )
                self._alarm(
                    f"{group[0][0]}Throttles",
                    scope,
                    metric=throttles,
                    threshold=0,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                    alarm_description=f"one of {names} was throttled",
                )
            for name, fn in members:
                limit_ms = timeouts_s[name] * 1000 * DURATION_SHARE_OF_TIMEOUT
                self._alarm(
                    f"{name}Duration",
                    scope,
                    metric=fn.metric_duration(period=FIVE_MINUTES, statistic="p99"),
                    threshold=limit_ms,
                    evaluation_periods=3,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                    alarm_description=f"{name}'s p99 duration is over 80% of its timeout",
                )

    def _scope_in(self, stack: Stack) -> Construct:
        """Where alarms on functions of ``stack`` go: this construct in the main stack, an
        ``Alarms`` construct in a nested one."""
        if stack is Stack.of(self):
            return self
        return stack.node.try_find_child("Alarms") or Construct(stack, "Alarms")

    def failed(self, name: str, fn: lambda_.Function, what: str) -> None:
        """An alarm on any error of a function nobody calls but a schedule."""
        self._alarm(
            f"{name}Failed",
            metric=fn.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            alarm_description=what,
        )

    def jobs(self, functions: Mapping[str, lambda_.Function], queues: Mapping[str, sqs.Queue]) -> None:
        for name, fn in functions.items():
            self.failed(name, fn, f"the {name} job failed")
            self._alarm(
                f"{name}DeadLetters",
                metric=queues[name].metric_approximate_number_of_messages_visible(period=FIVE_MINUTES),
                threshold=0,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                alarm_description=f"a {name} run was given up and is in its dead-letter queue",
            )
