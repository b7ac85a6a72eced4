"""GET /v1/patterns/golden-paths: pattern-fix pairs that worked at least min_applications times."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from capsule.core import limits
from capsule.learning import models
from functions import app
from functions.learning_app import learning


def golden_paths(
    min_applications: Annotated[int, Query(ge=1, le=1_000_000)] = 3,
    category: Annotated[str | None, Query(min_length=1, max_length=128, pattern=models.NO_CONTROL)] = None,
    k: Annotated[int, Query(ge=1, le=limits.MAX_PAGE)] = 20,
) -> models.GoldenPathsResult:
    return learning().golden_paths(app.tenant(), {"min_applications": min_applications, "category": category, "k": k})


ENDPOINT = app.Endpoint("golden_paths", golden_paths, summary="Fixes proven for recurring patterns")
handler = app.make_handler(ENDPOINT)
