"""POST /v1/memories/{id}/feedback: mark a memory helpful or not."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.core import models
from functions import app
from functions.handlers.get import MemoryId


def feedback(id: MemoryId, request: Annotated[models.FeedbackRequest, Body()]) -> models.MemoryResult:
    return app.service().feedback(app.tenant(), id, request)


ENDPOINT = app.Endpoint(
    "feedback", feedback, summary="Mark a memory helpful or not", errors=(401, 404, 413, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
