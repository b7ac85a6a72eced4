"""POST /v1/memories/ingest: chunk a text and store every chunk, all or none."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.core import models
from functions import app


def ingest(request: Annotated[models.IngestRequest, Body()]) -> models.IngestResult:
    return app.service().ingest(app.tenant(), request)


ENDPOINT = app.Endpoint("ingest", ingest, summary="Chunk a text and store the chunks", status_code=201)
handler = app.make_handler(ENDPOINT)
# Rules its schema cannot state (functions.openapi): a body it allows may still be refused so.
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {"status": 422, "rule": "expires_at is 1 s to 10 years ahead of now"},
    ],
}
