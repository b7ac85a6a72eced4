"""GET /v1/health: the caller is authenticated and the store answers."""

from pydantic import BaseModel

from functions import app


class Health(BaseModel):
    status: str
    tenant: str
    explanation: str


def health() -> Health:
    projects = app.service().projects(app.tenant())  # touches the store: 503 when it is down
    return Health(status="ok", tenant=app.tenant(),
                  explanation=f"The service and its store answer; you have {len(projects.projects)} projects.")


ENDPOINT = app.Endpoint("health", health, summary="Check the service and the caller's identity",
                        errors=(401, 500, 503))
handler = app.make_handler(ENDPOINT)
