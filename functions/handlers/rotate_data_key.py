"""POST /v1/keys/rotate: a new data key for the caller's tenant (encryption at rest), audited;
no downtime: earlier keys keep opening what they sealed, memories are re-sealed lazily."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.sealing.models import RotateRequest, RotateResult, rotate_for
from functions import app


def rotate_data_key(request: Annotated[RotateRequest, Body()]) -> RotateResult:
    return rotate_for(app.service(), app.tenant(), request)


ENDPOINT = app.Endpoint(
    "rotate_data_key",
    rotate_data_key,
    summary="Rotate the caller's data key (encryption at rest)",
    status_code=200,
    errors=(401, 403, 409, 413, 415, 422, 500, 503),
)
handler = app.make_handler(ENDPOINT)
