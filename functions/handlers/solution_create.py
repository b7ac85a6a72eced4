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
# Rules its schema cannot state (functions.openapi): a body it allows may still be refused so.
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {
            "status": 422,
            "rule": "a step payload's kept keys may nest objects, whose keys follow the meta-key rule at every level",
        },
        {"status": 422, "rule": "a step payload gives each field in at most one of its spellings"},
    ],
}
