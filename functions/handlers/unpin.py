"""POST /v1/memories/{id}/unpin: let the rolling limit evict this memory again."""

from capsule.core import models
from functions import app
from functions.handlers.get import MemoryId


def unpin(id: MemoryId) -> models.MemoryResult:
    return app.service().pin(app.tenant(), id, False)


ENDPOINT = app.Endpoint("unpin", unpin, summary="Unpin a memory", errors=(401, 404, 413, 422, 500, 503))
handler = app.make_handler(ENDPOINT)
