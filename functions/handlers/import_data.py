"""POST /v1/import: JSON Lines of an export (its header first) into the caller's tenant.

The body is at most the API's body limit: a larger file goes in parts, each starting
with the header line. Importing is idempotent, so a part sent twice writes nothing twice.
The result counts what was imported, skipped as already present and refused (by line
and field); a body that does not start with the header is refused whole (422).
"""

from capsule.transfer import DataImportResult, import_lines
from functions import app, transfer_app


def import_data() -> DataImportResult:
    lines = transfer_app.raw_body().splitlines(keepends=True)
    return import_lines(transfer_app.sources(), app.tenant(), lines, source="the request body")


ENDPOINT = app.Endpoint("import_data", import_data, summary="Import JSON Lines of an export (idempotent)")
handler = transfer_app.with_event(app.make_handler(ENDPOINT))
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {"status": 422, "rule": "the body's first line is an export's header line"},
    ],
    "requestBody": {"required": True, "content": {"application/x-ndjson": {"schema": {"type": "string"}}}},
}
