"""POST /v1/sync/apply: merge memory rows another peer sent (latest change wins per field; a
forget wins over an older edit), reporting conflicts (see capsule.sync.merge)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.sync import exchange
from capsule.sync import models as sm
from functions import app


def sync_apply(request: Annotated[sm.ApplyRequest, Body()]) -> sm.ApplyResult:
    return exchange.apply(app.service(), app.tenant(), request)


ENDPOINT = app.Endpoint(
    "sync_apply", sync_apply, summary="Merge memory rows from a sync peer", errors=(401, 409, 413, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
# Rules its schema cannot state (functions.openapi): a body it allows may still be refused so.
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {"status": 422, "rule": "an item's memory is in the request's project"},
        {"status": 422, "rule": "an item's embedding holds dims float32 numbers (4 x dims bytes once decoded)"},
        {"status": 422, "rule": "each vote names its item's memory"},
    ],
}
