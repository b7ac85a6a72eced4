"""POST /v1/patterns/mine: mine recurring error clusters across the caller's projects now."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.learning_app import learning


def detect_patterns(request: Annotated[models.DetectPatternsRequest, Body()]) -> models.DetectPatternsResult:
    return learning().detect_patterns(app.tenant(), request)


ENDPOINT = app.Endpoint("detect_patterns", detect_patterns, summary="Mine recurring error patterns")
handler = app.make_handler(ENDPOINT)
