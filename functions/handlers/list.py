"""GET /v1/memories?project=...: recent (or pinned, or forgotten) memories of a project, newest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BeforeValidator

from capsule.core import limits, models
from functions import app
from functions.params import query_bool


def list_memories(
    project: Annotated[str, Query(min_length=1, max_length=limits.MAX_PROJECT_CHARS, pattern=models.NO_CONTROL)],
    pinned_only: Annotated[bool, Query(), BeforeValidator(query_bool)] = False,
    forgotten: Annotated[
        bool,
        Query(
            description="true: the forgotten memories still restorable"
            " (restore brings one back), instead of the active ones"
        ),
        BeforeValidator(query_bool),
    ] = False,
    cursor: Annotated[str | None, Query(max_length=limits.MAX_CURSOR_CHARS, pattern=models.CURSOR_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=limits.MAX_PAGE)] = limits.DEFAULT_PAGE,
    retention: Annotated[
        models.EffectiveClass | None, Query(description="Only memories of this (effective) retention class.")
    ] = None,
    visibility: Annotated[models.Visibility | None, Query(description="Only memories of this visibility.")] = None,
    subject: Annotated[
        str | None,
        Query(min_length=1, max_length=256, pattern=models.NO_CONTROL, description="Only memories about this subject."),
    ] = None,
) -> models.ListResult:
    optional = {"retention": retention, "visibility": visibility, "subject": subject}
    request = {
        "project": project,
        "pinned_only": pinned_only,
        "forgotten": forgotten,
        "cursor": cursor,
        "limit": limit,
        **{k: v for k, v in optional.items() if v is not None},
    }
    return app.service().list_memories(app.tenant(), request, **app.narrowed())


ENDPOINT = app.Endpoint("list", list_memories, summary="List recent, pinned or forgotten memories of a project")
handler = app.make_handler(ENDPOINT)
