"""POST /v1/solutions/search: solutions for an error message, each with why it matched."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.learning_app import learning


def solution_search(request: Annotated[models.SolutionSearchRequest, Body()]) -> models.SolutionSearchResult:
    return learning().solution_search(app.tenant(), request)


ENDPOINT = app.Endpoint(
    "solution_search", solution_search, summary="Find solutions for an error (regex, meaning, success rate)"
)
handler = app.make_handler(ENDPOINT)
