"""GET /v1/memories/{id}/history: every version of a memory, oldest first."""

from capsule.governance import models as gm
from functions import app
from functions.handlers.get import MemoryId


def history(id: MemoryId) -> gm.HistoryResult:
    return app.service().history.history(app.tenant(), id)


ENDPOINT = app.Endpoint("history", history, summary="A memory's versions", errors=(401, 404, 422, 500, 503))
handler = app.make_handler(ENDPOINT)
