"""GET /v1/solutions?category=...: the caller's solutions, newest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from capsule.core import limits
from capsule.learning import models
from functions import app
from functions.learning_app import learning


def solution_list(
    category: Annotated[str | None, Query(min_length=1, max_length=128, pattern=models.NO_CONTROL)] = None,
    cursor: Annotated[str | None, Query(max_length=limits.MAX_CURSOR_CHARS, pattern=models.CURSOR_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=limits.MAX_PAGE)] = limits.DEFAULT_PAGE,
) -> models.SolutionList:
    return learning().list_solutions(app.tenant(), {"category": category, "cursor": cursor, "limit": limit})


ENDPOINT = app.Endpoint("solution_list", solution_list, summary="List solutions, newest first")
handler = app.make_handler(ENDPOINT)
