"""The scheduled jobs: Lambda functions on EventBridge schedules.

Two runs of one job never overlap: each run takes the job's lease in the store
(``capsule.jobs.scheduled``), and a run that finds it held returns at once. No reserved concurrency:
reserving even 1 fails the first deploy on a new account whose concurrency quota is 10
(Lambda keeps 10 unreserved), and the lease already does the job. Each has a dead-letter
queue for events that could not be delivered or whose run kept failing, and an alarm on any
failed run.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from .lambdas import Shared, python_function


@dataclass(frozen=True)
class Job:
    name: str
    handler: str
    schedule: events.Schedule
    description: str
    timeout_s: int = 300
    memory_mb: int = 1024


JOBS: tuple[Job, ...] = (
    Job(
        "Retention",
        "functions.jobs:retention_handler",
        events.Schedule.rate(Duration.hours(1)),
        "Purges memories forgotten over 30 days ago and expired cache entries",
    ),
    Job(
        "Mining",
        "functions.jobs:mining_handler",
        events.Schedule.rate(Duration.days(1)),
        "Mines recurring error patterns and links them to solutions",
        timeout_s=900,
    ),
    Job(
        "Backfill",
        "functions.jobs:backfill_handler",
        events.Schedule.rate(Duration.minutes(5)),
        "Embeds memories stored while the embedding provider was down",
        timeout_s=240,
    ),
    Job(
        "Redact",
        "functions.jobs:redact_handler",
        events.Schedule.rate(Duration.days(1)),
        "Redacts stored memories and their history by the current secret rules",
        timeout_s=900,
    ),
)


class ScheduledJobs(Construct):
    def __init__(self, scope: Construct, id: str, *, shared: Shared, secret: secretsmanager.ISecret) -> None:
        super().__init__(scope, id)
        self.functions: dict[str, lambda_.Function] = {}
        self.queues: dict[str, sqs.Queue] = {}
        for job in JOBS:
            self._add(job, shared, secret)

    def _add(self, job: Job, shared: Shared, secret: secretsmanager.ISecret) -> None:
        dlq = sqs.Queue(
            self,
            f"{job.name}DeadLetters",
            retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        fn = python_function(
            self,
            job.name,
            shared,
            handler=job.handler,
            memory_mb=job.memory_mb,
            timeout_s=job.timeout_s,
            description=job.description,
            dead_letter_queue=dlq,
            retry_attempts=1,  # a run that fails twice lands in the queue
        )
        secret.grant_read(fn)
        events.Rule(
            self,
            f"{job.name}Schedule",
            schedule=job.schedule,
            description=job.description,
            targets=[
                targets.LambdaFunction(fn, dead_letter_queue=dlq, retry_attempts=4, max_event_age=Duration.hours(1))
            ],
        )
        self.functions[job.name] = fn
        self.queues[job.name] = dlq
