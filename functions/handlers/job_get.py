"""GET /v1/jobs/{id}: an asynchronous job's status and, once done, the route's answer
(functions.async_jobs). Only the caller who submitted it (or a full, unscoped admin of the
tenant) sees it; any other id is the 404 of one that does not exist."""

import time
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path

from functions import app, async_jobs

JobId = Annotated[str, Path(min_length=1, max_length=64, description="The job's id (from the 202's Location)")]


def job_get(id: JobId) -> async_jobs.JobView:
    event = handler.resolver.current_event.raw_event  # type: ignore[attr-defined]  # set by app.make_handler
    reach = app.reach()
    return async_jobs.read(
        app.tenant(),
        id,
        caller=async_jobs.principal_of(event),
        unrestricted=reach.unrestricted and reach.has_access("admin"),
        store=async_jobs.store_for(app.service().store),
        now=time.time(),
        revive=async_jobs.dispatcher(),
    )


ENDPOINT = app.Endpoint(
    "job_get", job_get, summary="An asynchronous job's status and answer", errors=(401, 404, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
