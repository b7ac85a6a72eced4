"""GET /v1/solutions/{id}: one solution of the caller (another tenant's id is 404)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path

from capsule.learning import models
from functions import app
from functions.learning_app import learning

SolutionId = Annotated[str, Path(min_length=1, max_length=128, description="The solution's id")]


def solution_get(id: SolutionId) -> models.SolutionResult:
    return learning().get_solution(app.tenant(), id)


ENDPOINT = app.Endpoint("solution_get", solution_get, summary="Get one solution", errors=(401, 404, 422, 500, 503))
handler = app.make_handler(ENDPOINT)
