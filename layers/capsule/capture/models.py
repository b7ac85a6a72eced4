"""The capture operations' requests and results: strict, closed models (an unknown field is
refused with its name, types are never coerced)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core import limits
from ..core.models import NO_CONTROL, AwareDatetime, Content, Memory, ProjectName, Tag

Role = Literal["user", "assistant", "tool", "system"]
Status = Literal["pending", "approved", "rejected"]
MAX_EVENTS = 500
MAX_EVENT_CHARS = limits.MAX_CONTENT_BYTES
MAX_TOOL_RESULTS = 20
CandidateId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[0-9a-f]{1,64}$")]
CANDIDATE_CURSOR = r"^[0-9]{1,12}\.[0-9]{6}~[0-9a-f]{1,64}$"


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CaptureEvent(_Request):
    """One conversation event: who said it, what, when, in which session."""

    role: Role
    text: Annotated[str, Field(min_length=1, max_length=MAX_EVENT_CHARS)]
    time: AwareDatetime | None = Field(None, description="When it was said (default: now).")
    session: Annotated[str, Field(min_length=1, max_length=256, pattern=NO_CONTROL)] | None = None
    tool_results: list[Annotated[str, Field(max_length=MAX_EVENT_CHARS)]] = Field(
        default_factory=list, max_length=MAX_TOOL_RESULTS, description="What the tools the event called printed."
    )


class CaptureRequest(_Request):
    """Score conversation events and queue the ones worth remembering."""

    project: ProjectName
    events: list[CaptureEvent] = Field(min_length=1, max_length=MAX_EVENTS)
    auto_approve: bool = Field(False, description="Store at once the candidates at or above the project's threshold.")


class ApproveRequest(_Request):
    """Approve a candidate as it is, or edited."""

    text: Content | None = Field(None, description="The memory's text, edited (default: the candidate's).")
    tags: list[Tag] | None = Field(None, max_length=limits.MAX_TAGS)
    type: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    pinned: bool = False


class RejectRequest(_Request):
    reason: Annotated[str, Field(max_length=limits.MAX_EXPLANATION_CHARS)] | None = None


class ThresholdRequest(_Request):
    project: ProjectName
    threshold: float = Field(ge=0, le=1, description="Candidates scoring at least this are approved when asked.")


class Candidate(BaseModel):
    id: str
    project: str
    text: str
    score: float
    reason: str
    type: str = Field(description="The proposed class: decision, fix, error, dead_end, convention, preference, fact.")
    retention: str = Field(description="The proposed retention class: permanent or replaceable.")
    tags: list[str]
    status: Status
    role: str
    session: str | None
    occurred_at: datetime | None
    created_at: datetime
    decided_at: datetime | None
    memory_id: str | None
    note: str | None


class Skipped(BaseModel):
    text: str
    why: str
    candidate_id: str | None = None
    memory_id: str | None = None


class CaptureResult(BaseModel):
    candidates: list[Candidate]
    skipped: list[Skipped]
    approved: list[str] = Field(description="Ids of the candidates approved at once (auto_approve).")
    threshold: float
    explanation: str


class CandidateList(BaseModel):
    candidates: list[Candidate]
    next_cursor: str | None = None
    explanation: str


class DecisionResult(BaseModel):
    candidate: Candidate
    memory: Memory | None = None
    explanation: str


class ThresholdResult(BaseModel):
    project: str
    threshold: float
    explanation: str
