"""POST /v1/patterns/link: record that a solution worked or failed for a pattern."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.learning_app import learning


def pattern_link(request: Annotated[models.PatternLinkRequest, Body()]) -> models.PatternLinkResult:
    return learning().pattern_link(app.tenant(), request)


ENDPOINT = app.Endpoint(
    "pattern_link",
    pattern_link,
    summary="Record a solution's outcome for a pattern",
    errors=(401, 404, 413, 422, 500, 503),
)
handler = app.make_handler(ENDPOINT)
