"""POST /v1/memories: store one memory."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.core import models
from functions import app


def store(request: Annotated[models.StoreRequest, Body()]) -> models.StoreResult:
    return app.service().store_memory(app.tenant(), request)


ENDPOINT = app.Endpoint("store", store, summary="Store one memory", status_code=201)
handler = app.make_handler(ENDPOINT)
# Rules its schema cannot state (functions.openapi): a body it allows may still be refused so.
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {"status": 422, "rule": "expires_at is 1 s to 10 years ahead of now"},
        {"status": 422, "rule": "supersedes names an active memory of the caller's"},
    ],
}
