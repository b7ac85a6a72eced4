"""PUT /v1/memories/capture/settings: a project's auto-approve threshold."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.capture import models as cm
from functions import app, capture_app


def capture_settings(request: Annotated[cm.ThresholdRequest, Body()]) -> cm.ThresholdResult:
    return capture_app.capture().set_threshold(app.tenant(), request)


ENDPOINT = app.Endpoint("capture_settings", capture_settings, summary="Set a project's capture threshold")
handler = app.make_handler(ENDPOINT)
