"""PUT /v1/solutions/{id}: replace a solution's content (its success/failure counts are kept)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.handlers.solution_get import SolutionId
from functions.learning_app import learning


def solution_update(id: SolutionId, request: Annotated[models.Fixpack, Body()]) -> models.SolutionResult:
    return learning().update_solution(app.tenant(), id, request)


ENDPOINT = app.Endpoint("solution_update", solution_update, summary="Replace a solution",
                        errors=(401, 404, 413, 422, 500, 503))
handler = app.make_handler(ENDPOINT)
