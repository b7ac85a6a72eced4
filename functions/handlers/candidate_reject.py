"""POST /v1/memories/candidates/{id}/reject: never propose this candidate again."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.capture import models as cm
from functions import app, capture_app
from functions.handlers.candidate_approve import CandidateId


def candidate_reject(id: CandidateId, request: Annotated[cm.RejectRequest, Body()]) -> cm.DecisionResult:
    return capture_app.capture().reject(app.tenant(), id, request)


ENDPOINT = app.Endpoint(
    "candidate_reject",
    candidate_reject,
    summary="Reject a capture candidate",
    errors=(401, 404, 409, 413, 422, 500, 503),
)
handler = app.make_handler(ENDPOINT)
