"""POST /v1/import: JSON Lines of an export (its header first) into the caller's tenant.

The body is at most the API's body limit: a larger file goes in parts, each starting
with the header line. Importing is idempotent, so a part sent twice writes nothing twice.
The result counts what was imported, skipped as already present and refused (by line
and field); a body that does not start with the header is refused whole (422). The body is
split into lines as ``capsule import`` reads a file (at newlines only), and ``source``
(optional, a file's name) is named in the answer instead of "the request body", as
``capsule import FILE`` names the file it read.
"""

import io
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from capsule.core.models import NO_CONTROL
from capsule.transfer import DataImportResult, import_lines
from capsule.transfer.format import read_lines
from functions import app, transfer_app


def import_data(
    source: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=255,
            pattern=NO_CONTROL,
            description="Where the lines came from (a file's name), named in the explanation.",
        ),
    ] = None,
) -> DataImportResult:
    lines = read_lines(io.BytesIO(transfer_app.raw_body()))
    return import_lines(transfer_app.sources(), app.tenant(), lines, source=source or "the request body")


ENDPOINT = app.Endpoint("import_data", import_data, summary="Import JSON Lines of an export (idempotent)")
handler = transfer_app.with_event(app.make_handler(ENDPOINT))
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {"status": 422, "rule": "the body's first line is an export's header line"},
    ],
    "requestBody": {"required": True, "content": {"application/x-ndjson": {"schema": {"type": "string"}}}},
}
