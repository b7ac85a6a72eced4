"""POST /v1/memories/{id}/pin: never evict this memory."""

from capsule.core import models
from functions import app
from functions.handlers.get import MemoryId


def pin(id: MemoryId) -> models.MemoryResult:
    return app.service().pin(app.tenant(), id, True)


ENDPOINT = app.Endpoint("pin", pin, summary="Pin a memory (never evicted)", errors=(401, 404, 413, 422, 500, 503))
handler = app.make_handler(ENDPOINT)
