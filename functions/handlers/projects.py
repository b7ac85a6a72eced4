"""GET /v1/projects: the caller's projects with counts and limits."""

from capsule.core import models
from functions import app


def projects() -> models.ProjectsResult:
    result = app.service().projects(app.tenant())
    reach = app.reach()
    if reach.projects is not None:  # a key scoped to projects lists those only
        result.projects = [p for p in result.projects if reach.allows_project(p.project)]
        result.explanation = (
            f"{len(result.projects)} of the tenant's projects {reach.who} is scoped to, most recently active first."
        )
    return result


ENDPOINT = app.Endpoint("projects", projects, summary="The caller's projects", errors=(401, 500, 503))
handler = app.make_handler(ENDPOINT)
