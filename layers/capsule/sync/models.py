"""The sync exchange's requests and results (strict and closed)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from ..core import limits
from ..core.models import ProjectName
from ..core.schema_rules import SchemaOf
from ..transfer import format as fmt

MAX_ITEMS = 200
Count = Annotated[int, Field(ge=0, lt=limits.INT_END)]
Position = Annotated[list[Count], Field(min_length=2, max_length=2, description="[version, seq]")]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Item(_Request):
    # Checked by capsule.sync.rows with the export format's models (as an import's lines are), and
    # documented as those models: the schema is theirs, so it cannot drift from the check.
    memory: Annotated[dict[str, Any], SchemaOf(fmt.Memory)] = Field(
        description=(
            "The memory's row in the export format. Checked against the request, so not in this schema: its project "
            "is the request's, and its embedding holds dims float32 numbers (4 x dims bytes once base64 is decoded)."
        )
    )
    fields: dict[str, Any] = Field(default_factory=dict, description="The record's fields the row does not carry.")
    votes: list[Annotated[dict[str, Any], SchemaOf(fmt.Feedback)]] = Field(
        default_factory=list,
        max_length=10_000,
        description="Its votes, as export feedback rows; each names this item's memory (memory_id, not in this schema).",
    )


class ApplyRequest(_Request):
    project: ProjectName
    items: list[Item] = Field(max_length=MAX_ITEMS)
    base: Position | None = Field(
        None,
        description="The receiver's position the sender last synced with: rows "
        "it changed after that are both-sides changes (conflicts).",
    )


class Conflict(BaseModel):
    id: str
    fields: dict[str, str] = Field(description="Each field that differed: 'kept' or 'arrived', the side that won.")
    rule: str


class ApplyResult(BaseModel):
    project: str
    applied: int = Field(description="Memories written (new, or changed by the merge).")
    unchanged: int
    votes: int = Field(description="Votes kept that were not kept before.")
    conflicts: list[Conflict]
    version: int = Field(description="The receiver's project version after this write.")
    quiet: bool = Field(
        description="True when nothing else had changed the receiver since 'base': the sender may "
        "take this write's version as seen."
    )
    unknown_fields: list[str] = Field(default_factory=list)
    explanation: str


class ChangesPage(BaseModel):
    project: str
    items: list[dict[str, Any]]
    positions: list[list[int]] = Field(description="Each item's position, [version, seq].")
    version: int = Field(description="The project's version now.")
    model: str | None = Field(description="The embedding model of this side.")
    more: bool
