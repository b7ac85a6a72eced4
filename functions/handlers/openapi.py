"""GET /openapi.json: the OpenAPI 3 document (public: it holds no data)."""

from typing import Any

from functions import app


def openapi_document() -> dict[str, Any]:
    from functions.openapi import document  # it imports every handler, this one included

    return document()


ENDPOINT = app.Endpoint("openapi", openapi_document, summary="This API's OpenAPI 3 document", errors=(422, 500))
handler = app.make_handler(ENDPOINT)
