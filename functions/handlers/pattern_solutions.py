"""POST /v1/patterns/solutions: solutions for a pattern, ranked by how often they worked for it."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.learning_app import learning


def pattern_solutions(request: Annotated[models.PatternSolutionsRequest, Body()]) -> models.PatternSolutionsResult:
    return learning().pattern_solutions(app.tenant(), request)


ENDPOINT = app.Endpoint(
    "pattern_solutions", pattern_solutions, summary="Solutions of one pattern", errors=(401, 404, 413, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
