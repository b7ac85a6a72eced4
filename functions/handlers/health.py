"""GET /v1/health: the caller is authenticated, the store answers, and which embedder is in use."""

from pydantic import BaseModel, Field

from capsule.embedders import describe
from functions import app


class EmbedderStatus(BaseModel):
    name: str = Field(description="voyage, openai, minilm or hashing")
    model: str = Field(description="the model id stored with every memory it embeds")
    dims: int
    reason: str | None = Field(None, description="why this embedder was chosen")


class Health(BaseModel):
    status: str
    tenant: str
    embedder: EmbedderStatus
    explanation: str


def health() -> Health:
    service = app.service()
    projects = service.projects(app.tenant())  # touches the store: 503 when it is down
    info = describe(service.embedder)
    return Health(
        status="ok",
        tenant=app.tenant(),
        embedder=EmbedderStatus(name=info.name, model=info.model, dims=info.dims, reason=info.reason),
        explanation=f"The service and its store answer; you have {len(projects.projects)} projects. "
        f"Embedder: {info.sentence()}.",
    )


ENDPOINT = app.Endpoint(
    "health", health, summary="Check the service, its embedder and the caller's identity", errors=(401, 500, 503)
)
handler = app.make_handler(ENDPOINT)
