"""POST /v1/solutions/import: import one fixpack file's JSON as it is (ours or the Vector Bridge's).

The body is read by the learning service, not by the edge model, because an import keeps what a
create refuses: keys the format does not know stay under ``extra`` where the file had them and
are named in the result. A wrong type of a known key is still a 422 naming it. A fixpack with
the title and category of an existing solution replaces its content (counts kept), so importing
the same file twice changes nothing.
"""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.learning_app import learning


def solution_import(request: Annotated[models.FixpackFile, Body()]) -> models.ImportResult:
    return learning().import_solution(app.tenant(), request.root)


ENDPOINT = app.Endpoint("solution_import", solution_import, summary="Import one fixpack file")
handler = app.make_handler(ENDPOINT)
