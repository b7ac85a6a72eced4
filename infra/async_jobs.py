"""The worker of the asynchronous jobs (functions.async_jobs): one function, in the main stack,
that the accepting routes (ingest, import, mining) invoke asynchronously with a job's tenant and
id. It runs 15 minutes at most (Lambda's limit; a job uses 14, functions.async_jobs); it reads the
deployment's secret and seals and opens memories (the data key is granted in infra/stack.py).

Each accepting function is told the worker's name (``CAPSULE_JOB_FUNCTION``) and may invoke it,
nothing else. Lambda retries an invocation whose run raised (the store unreachable) twice; a job
already claimed is not run twice (its lease, capsule.store.async_jobs).
"""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from functions.async_jobs import FUNCTION_VARIABLE, WORKER_TIMEOUT_S

from .lambdas import Shared, python_function

HANDLER = "functions.job_worker:handler"
NAME = "JobWorker"


class JobWorker(Construct):
    def __init__(self, scope: Construct, id: str, *, shared: Shared, secret: secretsmanager.ISecret) -> None:
        super().__init__(scope, id)
        self.function = python_function(
            self,
            NAME,
            shared,
            handler=HANDLER,
            memory_mb=1024,
            timeout_s=WORKER_TIMEOUT_S,
            description="Runs the asynchronous jobs (ingest, import, mining) the API accepted with 202",
        )
        secret.grant_read(self.function)

    def accept_from(self, functions: Iterable[lambda_.Function]) -> None:
        """Let each function hand jobs to the worker: its name, and lambda:InvokeFunction on it."""
        # The function's ARN alone (grant_invoke would add its versions, ARN:*, which nothing invokes).
        invoke = iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.function.function_arn])
        for fn in functions:
            fn.add_environment(FUNCTION_VARIABLE, self.function.function_name)
            fn.add_to_role_policy(invoke)
