"""POST /v1/memories/candidates/{id}/approve: store a candidate (optionally edited) as a memory."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Path

from capsule.capture import models as cm
from functions import app, capture_app

CandidateId = Annotated[str, Path(min_length=1, max_length=64, description="The candidate's id")]


def candidate_approve(id: CandidateId, request: Annotated[cm.ApproveRequest, Body()]) -> cm.DecisionResult:
    return capture_app.capture().approve(app.tenant(), id, request)


ENDPOINT = app.Endpoint(
    "candidate_approve",
    candidate_approve,
    summary="Approve a capture candidate",
    errors=(401, 404, 409, 413, 422, 500, 503),
)
handler = app.make_handler(ENDPOINT)
