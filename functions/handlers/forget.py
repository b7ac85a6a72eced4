"""DELETE /v1/memories/{id}?reason=...: forget a memory (recoverable for 30 days)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BeforeValidator

from capsule.core import limits, models
from functions import app
from functions.handlers.get import MemoryId
from functions.params import query_bool


def forget(
    id: MemoryId,
    reason: Annotated[str | None, Query(max_length=limits.MAX_EXPLANATION_CHARS)] = None,
    force: Annotated[
        bool, Query(description="Needed to forget an irreplaceable memory."), BeforeValidator(query_bool)
    ] = False,
) -> models.MemoryResult:
    return app.service().forget(app.tenant(), id, {"reason": reason, "force": force})


ENDPOINT = app.Endpoint(
    "forget", forget, summary="Forget a memory (recoverable for 30 days)", errors=(401, 404, 409, 413, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
