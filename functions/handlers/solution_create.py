"""POST /v1/solutions: create a solution (fixpack)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.learning_app import learning


def solution_create(request: Annotated[models.Fixpack, Body()]) -> models.SolutionResult:
    return learning().create_solution(app.tenant(), request)


ENDPOINT = app.Endpoint("solution_create", solution_create, summary="Create a solution (fixpack)", status_code=201)
handler = app.make_handler(ENDPOINT)
