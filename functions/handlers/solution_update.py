"""PUT /v1/solutions/{id}: replace a solution's content (its success/failure counts are kept)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.handlers.solution_get import SolutionId
from functions.learning_app import learning


def solution_update(id: SolutionId, request: Annotated[models.Fixpack, Body()]) -> models.SolutionResult:
    return learning().update_solution(app.tenant(), id, request)


ENDPOINT = app.Endpoint(
    "solution_update", solution_update, summary="Replace a solution", errors=(401, 404, 413, 422, 500, 503)
)
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
