"""GET /v1/memories/candidates?project=&status=: the capture queue, newest first."""

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler.openapi.params import Query

from capsule.capture import models as cm
from capsule.core import limits, models
from functions import app, capture_app


def candidates(
    project: Annotated[
        str | None, Query(min_length=1, max_length=limits.MAX_PROJECT_CHARS, pattern=models.NO_CONTROL)
    ] = None,
    status: Annotated[Literal["pending", "approved", "rejected"], Query()] = "pending",
    cursor: Annotated[str | None, Query(max_length=100, pattern=cm.CANDIDATE_CURSOR)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> cm.CandidateList:
    return capture_app.capture().candidates(app.tenant(), project=project, status=status, cursor=cursor, limit=limit)


ENDPOINT = app.Endpoint("candidates", candidates, summary="List capture candidates (pending by default)")
handler = app.make_handler(ENDPOINT)
