"""POST /v1/patterns/detect: known error patterns matching an error, with their best fixes."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.learning_app import learning


def pattern_detect(request: Annotated[models.PatternDetectRequest, Body()]) -> models.PatternDetectResult:
    return learning().pattern_detect(app.tenant(), request)


ENDPOINT = app.Endpoint("pattern_detect", pattern_detect, summary="Match an error against known patterns")
handler = app.make_handler(ENDPOINT)
