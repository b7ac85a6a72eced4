"""GET /v1/memories/{id}: one memory of the caller (another tenant's id is 404)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path

from capsule.core import models
from functions import app

MemoryId = Annotated[str, Path(min_length=1, max_length=128, description="The memory's id")]


def get(id: MemoryId) -> models.MemoryResult:
    return app.service().get(app.tenant(), id)


ENDPOINT = app.Endpoint("get", get, summary="Get one memory", errors=(401, 404, 422, 500, 503))
handler = app.make_handler(ENDPOINT)
