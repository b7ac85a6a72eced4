"""GET /v1/usage?since=&until=&bucket=: the tenant's requests per UTC hour or day, by operation
(capsule.service.usage), and its rate limit. Tenant-wide figures: only a principal limited in
nothing but its access level reads them (capsule.authz.needs, reach ``tenant``)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from capsule.core import models
from capsule.core.errors import Unavailable
from capsule.service import usage as usage_service
from functions import app, metering


def usage(
    since: Annotated[
        models.AwareDatetime | None,
        Query(description="The window's start (RFC 3339, inclusive); default: 24 hours before until."),
    ] = None,
    until: Annotated[
        models.AwareDatetime | None,
        Query(description="The window's end (RFC 3339, exclusive); default: the end of the current hour."),
    ] = None,
    bucket: Annotated[
        usage_service.Bucket,
        Query(description="hour (a window of at most 31 days) or day (at most 400 days)."),
    ] = "hour",
) -> usage_service.UsageReport:
    meter = metering.meter_for(app.service())
    if meter is None:
        raise Unavailable("this service's store keeps no usage counts")
    return usage_service.usage_report(
        meter.store,
        app.tenant(),
        since=since,
        until=until,
        bucket=bucket,
        now=meter.now(),
        rate_limit=meter.limit,
        buffered_s=meter.flush_s if meter.buffering else None,
    )


ENDPOINT = app.Endpoint(
    "usage", usage, summary="The tenant's requests per hour or day, by operation", errors=(401, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
# Rules its schema cannot state (functions.openapi): a query it allows may still be refused so.
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {"status": 422, "rule": "until is later than since, both between 1970 and 9999"},
        {"status": 422, "rule": "since to until spans at most 31 days with bucket=hour, 400 days with bucket=day"},
    ],
}
