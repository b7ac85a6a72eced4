"""PUT /v1/projects/settings: set a project's rolling retention limit, its ephemeral TTL and its
secrets and personal-data policies."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from capsule.core import models
from functions import app


class ProjectSettingsBody(models.ProjectSettingsRequest):
    """The project and its new settings."""

    project: models.ProjectName


def project_settings(request: Annotated[ProjectSettingsBody, Body()]) -> models.ProjectsResult:
    settings = models.ProjectSettingsRequest.model_validate(request.model_dump(exclude={"project"}, exclude_none=True))
    return app.service().set_project_settings(app.tenant(), request.project, settings)


ENDPOINT = app.Endpoint(
    "project_settings", project_settings, summary="Set a project's retention limit and secrets/personal-data policies"
)
handler = app.make_handler(ENDPOINT)
