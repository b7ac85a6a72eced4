"""PATCH /v1/memories/{id}: change a memory in place (the earlier version is kept)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Header

from capsule.governance import models as gm
from functions import app
from functions.handlers.get import MemoryId

# str, not str | None: a header is text or absent. A null in its schema had generated clients (and
# schemathesis) send the text 'null', which the pattern refuses; absent is the default, None.
IfMatch = Annotated[
    str,
    Header(
        pattern=gm.IF_MATCH_PATTERN,
        max_length=66,
        description="The content's sha256 as last read (the memory's sha256): the update is refused with 412 "
        "if the memory changed since.",
    ),
]


def update(id: MemoryId, request: Annotated[gm.UpdateRequest, Body()], if_match: IfMatch = None) -> gm.UpdateResult:
    return app.service().history.update(app.tenant(), id, request, if_match=if_match)


ENDPOINT = app.Endpoint(
    "update",
    update,
    summary="Update a memory in place (content, tags, meta, class, expiry)",
    errors=(401, 404, 412, 413, 422, 500, 503),
)
handler = app.make_handler(ENDPOINT)
# Rules its schema cannot state (functions.openapi): a body it allows may still be refused so.
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {"status": 412, "rule": "If-Match, when given, names the memory's current sha256"},
        {"status": 422, "rule": "a ttl or expires_at without retention only for a memory already ephemeral"},
        {"status": 422, "rule": "expires_at is 1 s to 10 years ahead of now"},
    ],
}
