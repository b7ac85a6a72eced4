"""Alarms: the API's 5xx rate, and per function its throttles, its errors (jobs) and its
duration near the timeout. They notify one SNS topic (encrypted, TLS only)."""

from __future__ import annotations

from typing import Mapping

from aws_cdk import Duration
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

FIVE_MINUTES = Duration.minutes(5)
SERVER_ERROR_RATE_PERCENT = 1.0
DURATION_SHARE_OF_TIMEOUT = 0.8


class Alarms(Construct):
    def __init__(self, scope: Construct, id: str, *, alarm_email: str | None) -> None:
        super().__init__(scope, id)
        self.topic = sns.Topic(self, "Topic", display_name="Capsule Memory alarms", enforce_ssl=True,
                               master_key=kms.Alias.from_alias_name(self, "SnsKey", "alias/aws/sns"))
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        self.alarms: list[cloudwatch.Alarm] = []

    def _alarm(self, id: str, **props) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(self, id, evaluation_periods=props.pop("evaluation_periods", 1),
                                 treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING, **props)
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        self.alarms.append(alarm)
        return alarm

    def api(self, http_api: apigwv2.HttpApi) -> None:
        rate = cloudwatch.MathExpression(
            expression="IF(requests > 0, 100 * errors / requests, 0)",
            using_metrics={"errors": http_api.metric_server_error(period=FIVE_MINUTES, statistic="Sum"),
                           "requests": http_api.metric_count(period=FIVE_MINUTES, statistic="Sum")},
            label="5xx %", period=FIVE_MINUTES,
        )
        self._alarm("Api5xxRate", metric=rate, threshold=SERVER_ERROR_RATE_PERCENT, evaluation_periods=2,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                    alarm_description="More than 1% of API requests failed with a 5xx over 10 minutes")

    def functions(self, functions: Mapping[str, lambda_.Function], *, timeouts_s: Mapping[str, int]) -> None:
        for name, fn in functions.items():
            self._alarm(f"{name}Throttles", metric=fn.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
                        threshold=0, comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                        alarm_description=f"{name} was throttled")
            limit_ms = timeouts_s[name] * 1000 * DURATION_SHARE_OF_TIMEOUT
            self._alarm(f"{name}Duration", metric=fn.metric_duration(period=FIVE_MINUTES, statistic="p99"),
                        threshold=limit_ms, evaluation_periods=3,
                        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                        alarm_description=f"{name}'s p99 duration is over 80% of its timeout")

    def jobs(self, functions: Mapping[str, lambda_.Function], queues: Mapping[str, sqs.Queue]) -> None:
        for name, fn in functions.items():
            self._alarm(f"{name}Failed", metric=fn.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
                        threshold=0, comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                        alarm_description=f"the {name} job failed")
            self._alarm(f"{name}DeadLetters",
                        metric=queues[name].metric_approximate_number_of_messages_visible(period=FIVE_MINUTES),
                        threshold=0, comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                        alarm_description=f"a {name} run was given up and is in its dead-letter queue")
