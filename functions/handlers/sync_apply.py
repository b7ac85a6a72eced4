"""POST /v1/sync/apply: merge memory rows another peer sent (latest change wins per field; a
forget wins over an older edit), reporting conflicts (see capsule.sync.merge)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.sync import exchange
from capsule.sync import models as sm
from functions import app


def sync_apply(request: Annotated[sm.ApplyRequest, Body()]) -> sm.ApplyResult:
    return exchange.apply(app.service(), app.tenant(), request)


ENDPOINT = app.Endpoint("sync_apply", sync_apply, summary="Merge memory rows from a sync peer",
                        errors=(401, 409, 413, 422, 500, 503))
handler = app.make_handler(ENDPOINT)
