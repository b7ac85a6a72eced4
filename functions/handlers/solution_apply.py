"""POST /v1/solutions/{id}/apply: record that applying a solution worked or failed."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.handlers.solution_get import SolutionId
from functions.learning_app import learning


def solution_apply(id: SolutionId, request: Annotated[models.ApplyRequest, Body()]) -> models.ApplyResult:
    return learning().solution_apply(app.tenant(), id, request)


ENDPOINT = app.Endpoint(
    "solution_apply", solution_apply, summary="Record a solution's outcome", errors=(401, 404, 413, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
