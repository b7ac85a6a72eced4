"""POST /v1/memories/search: hybrid search in one project, or in all of the caller's."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.core import models
from functions import app


def search(request: Annotated[models.SearchRequest, Body()]) -> models.SearchResult:
    return app.service().search(app.tenant(), request, **app.narrowed())


ENDPOINT = app.Endpoint("search", search, summary="Search memories by meaning and keyword")
handler = app.make_handler(ENDPOINT)
