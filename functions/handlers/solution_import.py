"""POST /v1/solutions/import: import one fixpack file's JSON as it is.

Fields the fixpack format does not know are ignored and named in the result; a fixpack
with the title and category of an existing solution replaces its content (counts kept),
so importing the same file twice changes nothing.
"""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.learning import models
from functions import app
from functions.learning_app import learning


def solution_import(request: Annotated[models.FixpackFile, Body()]) -> models.ImportResult:
    return learning().import_solution(app.tenant(), request.model_dump(mode="json"))


ENDPOINT = app.Endpoint("solution_import", solution_import, summary="Import one fixpack file")
handler = app.make_handler(ENDPOINT)
