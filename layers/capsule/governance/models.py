"""The shapes users see for updates, history and revert (pydantic v2, strict like capsule.core.models)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core import limits
from ..core.errors import InvalidInput
from ..core.models import (
    RETENTION_DESCRIPTION,
    VISIBILITY_DESCRIPTION,
    AwareDatetime,
    Content,
    EffectiveClass,
    JsonInt,
    Memory,
    MemoryMeta,
    RetentionClass,
    Subject,
    Tag,
    Ttl,
    Visibility,
    _Request,
)
from ..core.retention_policy import EXPIRY_SCHEMA
from ..core.schema_rules import any_given

# The If-Match header: the content's sha256 as a memory result gives it (an ETag's quotes allowed).
IF_MATCH_PATTERN = r'^"?[0-9a-f]{64}"?$'


def check_if_match(value: str | None) -> str | None:
    """The sha256 an If-Match header names (quotes dropped), or None; a malformed one is refused."""
    if value is None:
        return None
    if not re.fullmatch(IF_MATCH_PATTERN.strip("^$"), value):
        raise InvalidInput(
            "If-Match: must be the memory's sha256 (64 lowercase hex digits, optionally quoted)", field="If-Match"
        )
    return value.strip('"')


UPDATABLE = ("content", "tags", "meta", "explanation", "retention", "ttl", "expires_at", "visibility", "subject")


class UpdateRequest(_Request):
    """Change a memory in place; every field left out stays as it is. The earlier version is kept."""

    # At least one change, and the expiry rules the schema can state (capsule.core.retention_policy). Not
    # stated, as they need the stored memory or the clock: a ttl or expires_at without retention only
    # for a memory already ephemeral, and expires_at ahead of now.
    model_config = ConfigDict(json_schema_extra={"allOf": [any_given(UPDATABLE), EXPIRY_SCHEMA]})

    content: Content | None = None
    tags: list[Tag] | None = Field(None, max_length=limits.MAX_TAGS, description="Replaces meta.tags.")
    meta: MemoryMeta | None = Field(None, description="Replaces the whole meta (tags, when given, win).")
    explanation: str | None = Field(None, max_length=limits.MAX_EXPLANATION_CHARS)
    retention: RetentionClass | None = Field(None, description=RETENTION_DESCRIPTION)
    ttl: Ttl | None = None
    expires_at: AwareDatetime | None = Field(
        None,
        description=(
            "When an ephemeral memory expires; instead of ttl, and only with retention ephemeral, or none for a memory "
            "already ephemeral. Checked against the stored memory and the server's clock, so not in this schema: "
            "the memory is ephemeral when retention is left out, and expires_at is 1 second to 10 years ahead of now."
        ),
    )
    visibility: Visibility | None = Field(None, description=VISIBILITY_DESCRIPTION + " Not versioned: revert keeps it.")
    subject: Subject | None = Field(None, description="The person or end-user it is about (set or changed).")
    reason: str | None = Field(
        None,
        max_length=limits.MAX_EXPLANATION_CHARS,
        description="Why it changed (kept in the audit record and the version).",
    )

    @model_validator(mode="after")
    def _something(self) -> UpdateRequest:
        if not any(getattr(self, name) is not None for name in UPDATABLE):
            raise ValueError(f"give at least one of {', '.join(UPDATABLE)} to change")
        return self


class RevertRequest(_Request):
    """Bring back an earlier version (the current one is kept as a version too)."""

    version: JsonInt = Field(ge=1, le=10**9, description="The version number, as history lists it.")
    reason: str | None = Field(None, max_length=limits.MAX_EXPLANATION_CHARS)


class Version(BaseModel):
    version: int
    current: bool = False
    content: str
    sha256: str
    path: str | None = None
    explanation: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    retention: RetentionClass = "auto"
    effective_retention: EffectiveClass = "replaceable"
    expires_at: datetime | None = None
    pinned: bool = False
    created_at: datetime | None = None
    replaced_at: datetime | None = None
    actor: str | None = None
    reason: str | None = None


class HistoryResult(BaseModel):
    memory: Memory
    versions: list[Version] = Field(description="Every version, oldest first; the last is the current one.")
    explanation: str


class UpdateResult(BaseModel):
    memory: Memory
    version: int = Field(description="The number of the version now current.")
    reembedded: bool = False
    explanation: str
