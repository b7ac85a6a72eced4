"""Atlas's AWS IAM authentication (``-c atlas_iam_auth=true``): no database password exists.

Each function signs in to Atlas as its execution role (``authMechanism=MONGODB-AWS``: the driver
signs an STS GetCallerIdentity request with the role's session credentials and Atlas asks STS
who that is), and Atlas maps the role's ARN to a database user. One role per function would
mean one Atlas user per function (46, and a new one for each new route, failing until added),
so the functions share one role per group of equal database rights and the stack outputs three
ARNs, one for each database user:

- ``Readers``: the routes that only read (GET): an Atlas custom role with ``find``,
  ``listCollections``, ``listIndexes`` and ``createIndex`` on the database: a cold start checks
  its indexes with createIndex (the capture queue's on every one), which changes nothing once
  ``capsule cloud setup-atlas`` has made them, but ``read`` alone refuses it.
- ``Writers``: every other authenticated route: ``readWrite`` on the database.
- ``Jobs``: the scheduled jobs, which work across tenants (retention, redaction): ``readWrite``;
  a user of their own, so their access can be audited or cut apart from the API's.

The API-key authorizer and the public OpenAPI document never open the database: they keep a
role of their own and no database user. A shared role still writes only to its own functions'
log groups (infra/lambdas.py adds each function's log statement to it).
"""

from __future__ import annotations

from aws_cdk import CfnOutput
from aws_cdk import aws_iam as iam
from constructs import Construct

from functions.routes import ROUTES, Route

from .async_jobs import HANDLER as WORKER_HANDLER
from .jobs import JOBS

GROUPS = {
    "Readers": "a custom role of find, listCollections, listIndexes and createIndex",
    "Writers": "the readWrite role",
    "Jobs": "the readWrite role",
}
# The environment variable capsule.store.mongo_client reads: sign in with the role, no password.
ENVIRONMENT = {"CAPSULE_MONGODB_AUTH": "aws"}


def route_group(route: Route) -> str | None:
    """The database user a route signs in as; None for a route that never opens the database."""
    if not route.auth:
        return None
    return "Readers" if route.method == "GET" else "Writers"


def groups_by_handler() -> dict[str, str]:
    """``module:function`` -> group, for every function that opens the database."""
    found = {route.handler: group for route in ROUTES if (group := route_group(route))}
    found.update({job.handler: "Jobs" for job in JOBS})
    found[WORKER_HANDLER] = "Writers"  # the asynchronous jobs write memories, as their routes do
    return found


class DatabaseRoles(Construct):
    """One execution role per group; ``by_handler`` is what infra/lambdas.py's ``Shared.roles`` takes."""

    def __init__(self, scope: Construct, id: str, *, database: str = "capsule") -> None:
        super().__init__(scope, id)
        self.database = database
        self.roles = {
            group: iam.Role(
                self,
                group,
                assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                description=f"Capsule Memory's {group.lower()}: an Atlas database user ({rights} on {database})",
            )
            for group, rights in GROUPS.items()
        }
        self.by_handler: dict[str, iam.IRole] = {
            handler: self.roles[group] for handler, group in groups_by_handler().items()
        }

    def outputs(self, scope: Construct) -> None:
        for group, role in self.roles.items():
            CfnOutput(
                scope,
                f"Atlas{group}RoleArn",
                value=role.role_arn,
                description=f"Add an Atlas database user of type AWS IAM role with this ARN and "
                f"{GROUPS[group]} on the {self.database} database (authentication database $external)",
            )
