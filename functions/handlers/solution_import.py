"""POST /v1/solutions/import: import one fixpack file's JSON as it is (ours or the Vector Bridge's).

The body is read by the learning service, not by the edge model, because an import keeps what a
create refuses: keys the format does not know stay under ``extra`` where the file had them and
are named in the result. A wrong type of a known key is still a 422 naming it. A fixpack with
the title and category of an existing solution replaces its content (counts kept), so importing
the same file twice changes nothing. ``source`` (optional, a file's name) is named in the
answer's explanation, as ``capsule solutions import FILE`` names the file it read.
"""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from capsule.learning import models
from functions import app
from functions.learning_app import learning


def solution_import(
    request: Annotated[models.FixpackFile, Body()],
    source: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=255,
            pattern=models.NO_CONTROL,
            description="Where the fixpack came from (a file's name), named in the explanation.",
        ),
    ] = None,
) -> models.ImportResult:
    return learning().import_solution(app.tenant(), request.root, source=source)


ENDPOINT = app.Endpoint("solution_import", solution_import, summary="Import one fixpack file")
handler = app.make_handler(ENDPOINT)
# Rules its schema cannot state (functions.openapi): a body it allows may still be refused so.
handler.openapi = {  # type: ignore[attr-defined]  # read by functions.openapi
    "x-capsule-rules": [
        {
            "status": 422,
            "rule": "a fixpack file is an object with a fixpack's fields, in either project's names, and "
            "keys of its own: the fields a fixpack needs must be there, valid",
        },
    ],
}
