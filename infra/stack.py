"""The one stack: the secret, the layer, the API, the scheduled jobs and their alarms."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Acknowledgment, Aws, CfnOutput, Stack, Validations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from functions.async_jobs import ROUTES as ASYNC_ROUTES
from functions.async_jobs import WORKER_TIMEOUT_S
from functions.routes import ROUTES

from .api import CapsuleApi, Throttle
from .async_jobs import NAME as JOB_WORKER
from .async_jobs import JobWorker
from .atlas_auth import ENVIRONMENT as IAM_AUTH_ENVIRONMENT
from .atlas_auth import DatabaseRoles
from .atlas_network import AtlasNetwork, NetworkChoice
from .datakeys import DataKeys
from .jobs import JOBS, ScheduledJobs
from .lambdas import RUNTIME, Shared
from .monitoring import Alarms
from .rotation import SecretRotation

# The one secret's keys (a JSON object). functions/secrets.py reads the same names.
SECRET_TEMPLATE = '{"mongodb_uri": "", "voyage_api_key": "", "openai_api_key": "", "api_keys": {}}'


@dataclass(frozen=True)
class StackOptions:
    functions_asset: Path
    layer_zip: Path
    api_key_auth: bool = False
    alarm_email: str | None = None
    embedder: str = "voyage"
    throttle: Throttle = Throttle()
    tenant_per_session: bool = False  # functions/tenancy.py: one tenant per assumed-role session
    # functions/metering.py: a metric per tenant and costly operation (a custom metric each, $0.30
    # a month: docs/aws.md); requests a tenant may make a minute (0: no limit)
    tenant_metrics: bool = False
    tenant_rate_limit: int = 0
    # Projects of at least this many memories are searched through the cluster's indexes and
    # never read whole into a function (about 18.5 KiB each decoded: 5,000 is ~90 MB).
    vector_search_min: int = 5_000
    # The customer's KMS key that wraps the data keys (encryption at rest); None: the stack makes one.
    kms_key_arn: str | None = None
    # How the functions reach Atlas (infra/atlas_network.py) and whether they sign in with their roles.
    network: NetworkChoice = NetworkChoice(mode="public")
    atlas_iam_auth: bool = False
    # How the search route's function starts (infra/context.py search_start): kind, warm count.
    search_start: tuple[str, int] = ("on-demand", 0)
    # The database password rotated every N days through the Atlas service account in this secret
    # (infra/rotation.py); None: not rotated (a role's sign-in, -c atlas_iam_auth=true, has none).
    secret_rotation: tuple[int, str] | None = None


class CapsuleStack(Stack):
    def __init__(self, scope: Construct, id: str, *, options: StackOptions, **kwargs) -> None:
        super().__init__(scope, id, **kwargs)
        self.secret = secretsmanager.Secret(
            self,
            "Secrets",
            description="Capsule Memory: mongodb_uri, voyage_api_key, openai_api_key, api_keys",
            # Generated only to create the secret with its keys; fill in the values after deploying.
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template=SECRET_TEMPLATE, generate_string_key="placeholder"
            ),
        )
        layer = lambda_.LayerVersion(
            self,
            "CapsuleLayer",
            code=lambda_.Code.from_asset(str(options.layer_zip)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.ARM_64],
            description="capsule-memory library and its runtime dependencies",
        )
        self.data_keys = DataKeys(self, "DataKeys", key_arn=options.kms_key_arn)
        self.network = AtlasNetwork(self, "AtlasNetwork", choice=options.network)
        self.database_roles = DatabaseRoles(self, "DatabaseRoles") if options.atlas_iam_auth else None
        shared = Shared(
            code=lambda_.Code.from_asset(str(options.functions_asset)),
            layer=layer,
            environment={
                "CAPSULE_STORE": "mongo",
                "CAPSULE_EMBEDDER": options.embedder,
                "CAPSULE_TENANT_PER_SESSION": "true" if options.tenant_per_session else "false",
                "CAPSULE_MONGODB_VECTOR_SEARCH_MIN": str(options.vector_search_min),
                "CAPSULE_TENANT_METRICS": "true" if options.tenant_metrics else "false",
                "CAPSULE_TENANT_RATE_LIMIT": str(options.tenant_rate_limit),
                # Only the secret's ARN: functions/secrets.py reads the values at run time (cached).
                "CAPSULE_SECRET_ARN": self.secret.secret_arn,
                # capsule.crypto: tenants' data keys are wrapped by this KMS key.
                "CAPSULE_KMS_KEY_ID": self.data_keys.key.key_arn,
                "POWERTOOLS_SERVICE_NAME": "capsule-memory",
                "POWERTOOLS_METRICS_NAMESPACE": "CapsuleMemory",
                "POWERTOOLS_PARAMETERS_MAX_AGE": "300",
                **(IAM_AUTH_ENVIRONMENT if options.atlas_iam_auth else {}),
            },
            placement=self.network.placement,
            roles=self.database_roles.by_handler if self.database_roles else {},
        )
        self.api = CapsuleApi(
            self,
            "Api",
            shared=shared,
            secret=self.secret,
            api_key_auth=options.api_key_auth,
            throttle=options.throttle,
            functions_asset=options.functions_asset,
            search_start=options.search_start,
        )
        self.jobs = ScheduledJobs(self, "Jobs", shared=shared, secret=self.secret)
        # Ingest, import and mining past the synchronous budget: accepted with 202, run by the worker.
        self.job_worker = JobWorker(self, "AsyncJobs", shared=shared, secret=self.secret)
        # (and the job's route, which hands over again a job whose worker died: functions.async_jobs.read)
        self.job_worker.accept_from(
            fn for name, fn in self.api.functions.items() if name in ASYNC_ROUTES or name == "job_get"
        )
        self.rotation = None
        if options.secret_rotation is not None:
            every_days, admin_secret_arn = options.secret_rotation
            self.rotation = SecretRotation(
                self,
                "SecretRotation",
                shared=shared,
                secret=self.secret,
                admin_secret_arn=admin_secret_arn,
                every_days=every_days,
            )
        # The data key only where memories are sealed or opened: not the public document, not the authorizer.
        sealing = [fn for name, fn in self.api.functions.items() if name in {r.name for r in ROUTES if r.auth}]
        self.data_keys.grant([*sealing, *self.jobs.functions.values(), self.job_worker.function])
        self.alarms = Alarms(self, "Alarms", alarm_email=options.alarm_email)
        self.alarms.api(self.api.http_api, self.api.access_logs)
        timeouts = {route.name: route.timeout_s for route in ROUTES}
        timeouts["authorizer"] = 5
        self.alarms.functions(self.api.functions, timeouts_s=timeouts)
        self.alarms.functions(self.jobs.functions, timeouts_s={job.name: job.timeout_s for job in JOBS})
        self.alarms.jobs(self.jobs.functions, self.jobs.queues)
        self.alarms.functions({JOB_WORKER: self.job_worker.function}, timeouts_s={JOB_WORKER: WORKER_TIMEOUT_S})
        if self.rotation is not None:  # a failed rotation keeps AWSCURRENT, but someone must hear of it
            self.alarms.failed(
                "SecretRotation", self.rotation.function, "the secret's rotation failed: AWSCURRENT is unchanged"
            )
        CfnOutput(self, "ApiUrl", value=self.api.http_api.api_endpoint)
        # Callers sign with SigV4 and need execute-api:Invoke on the API: the ARN and a policy to attach.
        api_arn = f"arn:{Aws.PARTITION}:execute-api:{Aws.REGION}:{Aws.ACCOUNT_ID}:{self.api.http_api.api_id}"
        CfnOutput(self, "ApiArn", value=api_arn, description="The API's ARN (execute-api), for callers' IAM policies")
        CfnOutput(
            self,
            "InvokePolicy",
            description="Attach to a caller's role or user (aws iam put-role-policy "
            "--policy-document): it may call every route of this API's $default stage",
            value=self.to_json_string(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {"Effect": "Allow", "Action": "execute-api:Invoke", "Resource": f"{api_arn}/$default/*"}
                    ],
                }
            ),
        )
        CfnOutput(
            self,
            "DataKeyArn",
            value=self.data_keys.key.key_arn,
            description="The KMS key that wraps the tenants' data keys (encryption at rest)",
        )
        CfnOutput(
            self,
            "SecretArn",
            value=self.secret.secret_arn,
            description="Fill in mongodb_uri and the embedding provider's key here",
        )
        self.network.outputs(self)
        if self.database_roles:
            self.database_roles.outputs(self)
        self._acknowledge()

    def _acknowledge(self) -> None:
        """cdk-nag findings we accept, each with its reason (cdk-nag 3.x: Validations.acknowledge)."""
        if self.rotation is None:
            Validations.of(self.secret).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-SMG4",
                    reason="Rotation is opt-in (-c secret_rotation_days with an Atlas service account); "
                    "with -c atlas_iam_auth=true there is no database password, and the embedding "
                    "providers' keys are rotated at the providers",
                )
            )
        rotator = [self.rotation.function] if self.rotation else []
        for fn in [*self.api.functions.values(), *self.jobs.functions.values(), *rotator, self.job_worker.function]:
            Validations.of(fn).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-L1",
                    reason="Pinned to Python 3.12: the shared layer's binary wheels are built for cp312",
                )
            )
        openapi = self.api.routes.get("openapi")
        if openapi is not None:
            Validations.of(openapi).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-APIG4",
                    reason="The OpenAPI document is public by design (route table: auth=False); it reveals no data",
                )
            )
        for queue in self.jobs.queues.values():
            Validations.of(queue).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-SQS3", reason="This queue is itself the dead-letter queue of a scheduled job"
                )
            )
