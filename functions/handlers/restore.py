"""POST /v1/memories/{id}/restore: bring back a forgotten memory (within 30 days)."""

from capsule.core import models
from functions import app
from functions.handlers.get import MemoryId


def restore(id: MemoryId) -> models.RestoreResult:
    return app.service().restore(app.tenant(), id)


ENDPOINT = app.Endpoint(
    "restore", restore, summary="Restore a forgotten memory", errors=(401, 404, 409, 413, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
