"""GET /v1/projects: the caller's projects with counts and limits."""

from capsule import models
from functions import app


def projects() -> models.ProjectsResult:
    return app.service().projects(app.tenant())


ENDPOINT = app.Endpoint("projects", projects, summary="The caller's projects", errors=(401, 500, 503))
handler = app.make_handler(ENDPOINT)
