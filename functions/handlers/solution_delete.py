"""DELETE /v1/solutions/{id}: delete a solution, its applications and its pattern links."""

from capsule.learning import models
from functions import app
from functions.handlers.solution_get import SolutionId
from functions.learning_app import learning


def solution_delete(id: SolutionId) -> models.DeleteResult:
    return learning().delete_solution(app.tenant(), id)


ENDPOINT = app.Endpoint(
    "solution_delete", solution_delete, summary="Delete a solution", errors=(401, 404, 422, 500, 503)
)
handler = app.make_handler(ENDPOINT)
