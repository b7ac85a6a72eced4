"""PUT /v1/projects/settings: set a project's rolling retention limit and its ephemeral TTL."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule import models
from functions import app


class ProjectSettingsBody(models.ProjectSettingsRequest):
    """The project and its new settings."""

    project: models.ProjectName


def project_settings(request: Annotated[ProjectSettingsBody, Body()]) -> models.ProjectsResult:
    settings = models.ProjectSettingsRequest(retention_limit=request.retention_limit,
                                             ephemeral_ttl=request.ephemeral_ttl)
    return app.service().set_retention_limit(app.tenant(), request.project, settings)


ENDPOINT = app.Endpoint("project_settings", project_settings, summary="Set a project's retention limit")
handler = app.make_handler(ENDPOINT)
