"""GET /v1/sync/changes?project=&after=V.S&limit=: a project's memories changed after a
position, in the export format, for ``capsule sync`` (see capsule.sync)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from capsule.core import limits, models
from capsule.sync import exchange
from capsule.sync import models as sm
from functions import app


def _position(after: str | None) -> tuple[int, int] | None:
    if after is None:
        return None
    version, _, seq = after.partition(".")
    return int(version), int(seq)


def sync_changes(
    project: Annotated[str, Query(min_length=1, max_length=limits.MAX_PROJECT_CHARS, pattern=models.NO_CONTROL)],
    after: Annotated[
        str | None,
        Query(pattern=r"^[0-9]{1,18}\.[0-9]{1,19}$", description="The position after which to read: version.seq"),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=sm.MAX_ITEMS)] = 100,
) -> sm.ChangesPage:
    return exchange.changes(app.service(), app.tenant(), project, after=_position(after), limit=limit)


ENDPOINT = app.Endpoint("sync_changes", sync_changes, summary="Memories changed after a position (sync)")
handler = app.make_handler(ENDPOINT)
