"""POST /v1/memories/{id}/revert: bring back an earlier version (the current one is kept too)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.governance import models as gm
from functions import app
from functions.handlers.get import MemoryId
from functions.handlers.update import IfMatch


def revert(id: MemoryId, request: Annotated[gm.RevertRequest, Body()], if_match: IfMatch = None) -> gm.UpdateResult:
    return app.service().history.revert(app.tenant(), id, request, if_match=if_match)


ENDPOINT = app.Endpoint(
    "revert", revert, summary="Revert a memory to an earlier version", errors=(401, 404, 412, 413, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
# Rules its schema cannot state (functions.openapi): a body it allows may still be refused so.
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {"status": 412, "rule": "If-Match, when given, names the memory's current sha256"},
        {"status": 422, "rule": "the version is an earlier version of this memory"},
    ],
}
