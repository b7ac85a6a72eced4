"""GET /v1/audit?project=&memory_id=&action=&since=&until=&cursor=&limit=: the tenant's audit log,
newest first, a page at a time (capsule.service.audit); a limited key sees the records of the
memories it can read (capsule.authz.audit_keep)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from capsule import authz
from capsule.core import limits, models
from capsule.service import audit as audit_log
from functions import app, scopes

MAX_ID_CHARS = 512


def audit(
    project: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=limits.MAX_PROJECT_CHARS,
            pattern=models.NO_CONTROL,
            description="Only the records of this project.",
        ),
    ] = None,
    memory_id: Annotated[
        str | None,
        Query(
            min_length=1, max_length=MAX_ID_CHARS, pattern=models.NO_CONTROL, description="Only this memory's records."
        ),
    ] = None,
    action: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=64,
            pattern=r"^[a-z_]+$",
            description="Only records of this action (forget, restore, evict, pin, unpin, purge, update, ...).",
        ),
    ] = None,
    since: Annotated[
        models.AwareDatetime | None, Query(description="Only records at or after this time (RFC 3339).")
    ] = None,
    until: Annotated[
        models.AwareDatetime | None, Query(description="Only records before this time (RFC 3339).")
    ] = None,
    cursor: Annotated[
        str | None,
        Query(
            max_length=limits.MAX_CURSOR_CHARS,
            pattern=models.CURSOR_PATTERN,
            description="next_cursor of the page before",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=limits.MAX_PAGE)] = limits.DEFAULT_PAGE,
) -> audit_log.AuditPage:
    return audit_log.audit_page(
        app.service().store,
        app.tenant(),
        project=project,
        memory_id=memory_id,
        action=action,
        since=since,
        until=until,
        cursor=cursor,
        limit=limit,
        keep=authz.audit_keep(scopes.readable(app.tenant(), app.service)),
    )


ENDPOINT = app.Endpoint(
    "audit", audit, summary="The tenant's audit log, newest first, filtered", errors=(401, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
