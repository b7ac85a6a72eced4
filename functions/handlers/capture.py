"""POST /v1/memories/capture: score conversation events and queue the candidates worth remembering."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.capture import models as cm
from functions import app, capture_app


def capture(request: Annotated[cm.CaptureRequest, Body()]) -> cm.CaptureResult:
    return capture_app.capture().capture(app.tenant(), request)


ENDPOINT = app.Endpoint("capture", capture, summary="Propose memories from conversation events (no LLM)")
handler = app.make_handler(ENDPOINT)
