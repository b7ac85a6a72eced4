"""GET /v1/export?project=...: the tenant's (or one project's) data as JSON Lines.

One response carries at most 5 MiB as Lambda sends it (its text escaped again inside Lambda's
answer, capsule.core.wire; a Lambda answer is at most 6 MB); when more follows,
the ``X-Capsule-Next-Cursor`` header gives the cursor for the next request. The bodies of
all the pages, one after another, are the whole export file.
"""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Query

from capsule import authz
from capsule.core import limits, wire
from capsule.transfer.export import export_page
from functions import app, scopes, transfer_app

PAGE_BYTES = wire.PAGE_BUDGET
NEXT_CURSOR = "X-Capsule-Next-Cursor"
MEDIA_TYPE = "application/x-ndjson"


def export(
    project: Annotated[str | None, Query(min_length=1, max_length=limits.MAX_PROJECT_CHARS)] = None,
    cursor: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=4096,
            pattern=r"^[A-Za-z0-9_-]+$",
            description="X-Capsule-Next-Cursor of the page before",
        ),
    ] = None,
) -> str:
    sources = transfer_app.sources()
    keep = authz.export_keep(
        scopes.readable(app.tenant(), app.service),
        lambda tag, category: sources.learning.get_pattern(app.tenant(), tag, category),
    )
    page = export_page(
        sources, app.tenant(), project, cursor, max_bytes=PAGE_BYTES, size_of=wire.wrapped_bytes, keep=keep
    )
    headers = {NEXT_CURSOR: page.next_cursor} if page.next_cursor else {}
    return Response(200, MEDIA_TYPE, page.text, headers=headers)  # type: ignore[return-value]


ENDPOINT = app.Endpoint(
    "export",
    export,
    errors=(401, 404, 413, 422, 500, 503),
    summary="Export memories, feedback, audit, solutions and patterns as JSON Lines",
)
handler = app.make_handler(ENDPOINT)
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "responses": {
        "200": {
            "description": f"JSON Lines, one row per line; {NEXT_CURSOR} names the next page's cursor when more follows",
            "headers": {NEXT_CURSOR: {"schema": {"type": "string"}}},
            "content": {MEDIA_TYPE: {"schema": {"type": "string"}}},
        }
    },
}
