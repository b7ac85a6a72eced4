"""The shapes of solutions (fixpacks) and patterns that users see (pydantic v2, the edge).

A fixpack file written for the original multi-project memory validates into
:class:`Fixpack` as it is: ``title, description, category, component, tags,
package_manager, signatures[{text, regexes, meta}], steps[{step_order, kind, payload,
description, timeout_ms}], checks[{check_order, cmd, expect_substring | expect_exit_code,
timeout_ms}]``. Every regex is compiled by :mod:`.safe_regex` while validating, so a
catastrophic pattern is refused before anything is stored.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .. import limits
from ..errors import InvalidInput
from ..models import (
    CURSOR_PATTERN, META_SCHEMA_EXTRA, NO_CONTROL, MetaValue, NO_NUL, JsonInt, ProjectName, Tag, check_meta_keys, json_int,
)
from .safe_regex import compile_safe

MAX_FIXPACK_BYTES = 256 * 1024
MAX_SIGNATURES = 20
MAX_REGEXES = 10
MAX_STEPS = 50
MAX_CHECKS = 20
MAX_TIMEOUT_MS = 3_600_000
DEFAULT_TIMEOUT_MS = 60_000
MAX_TEXT_CHARS = 8192
MAX_PAYLOAD_CHARS = 64 * 1024


ShortText = Annotated[str, Field(min_length=1, max_length=256, pattern=NO_NUL)]
Name = Annotated[str, Field(min_length=1, max_length=128, pattern=NO_CONTROL)]
LongText = Annotated[str, Field(max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
Timeout = Annotated[int, Field(ge=1, le=MAX_TIMEOUT_MS, description="Milliseconds."), BeforeValidator(json_int)]


class _Strict(BaseModel):
    # strict: JSON types as the schema says ("yes" is not a boolean, "5" not an integer).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class SignatureMeta(BaseModel):
    """Free metadata of a signature; ``min_score`` is the similarity that counts as a match."""

    model_config = ConfigDict(extra="allow", json_schema_extra=META_SCHEMA_EXTRA)
    __pydantic_extra__: dict[str, MetaValue] = Field(init=False)

    min_score: float | None = Field(None, ge=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        check_meta_keys(data, "signature meta")
        return data


def _regex(value: str) -> str:
    try:
        compile_safe(value)
    except InvalidInput as exc:  # a ValueError lets pydantic name the exact field
        raise ValueError(exc.message) from None
    return value


Regex = Annotated[str, Field(min_length=1, json_schema_extra={"format": "regex"}), AfterValidator(_regex)]


class Signature(_Strict):
    text: Annotated[str, Field(min_length=1, max_length=2000, pattern=NO_NUL)] = Field(
        description="An error message this solution fixes, as it is usually seen.")
    regexes: list[Regex] = Field(default_factory=list, max_length=MAX_REGEXES,
                                 description="Patterns (RE2 syntax) that identify the error.")
    meta: SignatureMeta = Field(default_factory=SignatureMeta)


class PatchPayload(_Strict):
    file: Annotated[str, Field(min_length=1, max_length=limits.MAX_PATH_CHARS, pattern=NO_NUL)]
    search: Annotated[str, Field(min_length=1, max_length=MAX_PAYLOAD_CHARS)]
    replace: Annotated[str, Field(max_length=MAX_PAYLOAD_CHARS)]


class CmdPayload(_Strict):
    command: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]


def _payload_rules() -> dict[str, Any]:
    # The payload each kind needs, stated in the schema as the validator below checks it.
    kinds = {"patch": PatchPayload, "cmd": CmdPayload}
    return {"anyOf": [{"properties": {"kind": {"const": kind}, "payload": model.model_json_schema()}}
                      for kind, model in kinds.items()]}


class Step(_Strict):
    model_config = ConfigDict(json_schema_extra=_payload_rules())

    step_order: JsonInt = Field(ge=0, le=10_000)
    kind: Literal["patch", "cmd"]
    payload: dict[str, Any]
    description: LongText | None = None
    timeout_ms: Timeout = DEFAULT_TIMEOUT_MS

    @model_validator(mode="after")
    def _payload_fits_kind(self) -> "Step":
        model = PatchPayload if self.kind == "patch" else CmdPayload
        try:
            self.payload = model.model_validate(self.payload).model_dump()
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            needs = "file, search and replace" if self.kind == "patch" else "command"
            raise ValueError(f"a {self.kind} step's payload needs {needs}: payload.{where}: {first['msg']}") from None
        return self


class Check(_Strict):
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        {"required": ["expect_substring"], "properties": {"expect_substring": {"type": "string"}}},
        {"required": ["expect_exit_code"], "properties": {"expect_exit_code": {"type": "integer"}}}]})

    check_order: JsonInt = Field(ge=0, le=10_000)
    cmd: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
    expect_substring: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)] | None = None
    expect_exit_code: Annotated[int, Field(ge=0, le=255), BeforeValidator(json_int)] | None = None
    timeout_ms: Timeout = DEFAULT_TIMEOUT_MS

    @model_validator(mode="after")
    def _expects_something(self) -> "Check":
        if self.expect_substring is None and self.expect_exit_code is None:
            raise ValueError("a check needs expect_substring or expect_exit_code")
        return self


def _unique_orders(items: list, attribute: str) -> list:
    # In order; equal orders keep their order in the file (a stable sort), so no two orders
    # can make a fixpack invalid, a rule no schema could state.
    return sorted(items, key=lambda i: getattr(i, attribute))


class Fixpack(_Strict):
    """One solution: how to recognise an error and the ordered steps and checks that fix it."""

    title: ShortText
    description: LongText = ""
    category: Name = "general"
    component: Name | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=limits.MAX_TAGS)
    package_manager: Name | None = None
    signatures: list[Signature] = Field(min_length=1, max_length=MAX_SIGNATURES)
    steps: list[Step] = Field(default_factory=list, max_length=MAX_STEPS)
    checks: list[Check] = Field(default_factory=list, max_length=MAX_CHECKS)
    success_count: JsonInt = Field(0, ge=0, le=limits.MAX_COUNT)
    failure_count: JsonInt = Field(0, ge=0, le=limits.MAX_COUNT)

    @model_validator(mode="before")
    @classmethod
    def _size(cls, data: Any) -> Any:
        try:
            size = len(json.dumps(data, default=str))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a fixpack must be JSON: {exc}") from exc
        if size > MAX_FIXPACK_BYTES:
            raise ValueError(f"the fixpack is {size} bytes of JSON; the limit is {MAX_FIXPACK_BYTES}")
        return data

    @field_validator("steps")
    @classmethod
    def _steps_in_order(cls, steps: list[Step]) -> list[Step]:
        return _unique_orders(steps, "step_order")

    @field_validator("checks")
    @classmethod
    def _checks_in_order(cls, checks: list[Check]) -> list[Check]:
        return _unique_orders(checks, "check_order")


FIXPACK_FIELDS = frozenset(Fixpack.model_fields)


class FixpackFile(Fixpack):
    """A fixpack file as written for the original memory: fields we do not keep are allowed
    (and reported as ignored by the import)."""

    model_config = ConfigDict(extra="allow")


# ---- requests ---------------------------------------------------------------


class ListSolutionsRequest(_Strict):
    category: Name | None = None
    cursor: str | None = Field(None, max_length=limits.MAX_CURSOR_CHARS, pattern=CURSOR_PATTERN)
    limit: JsonInt = Field(limits.DEFAULT_PAGE, ge=1, le=limits.MAX_PAGE)


ErrorText = Annotated[str, Field(min_length=1, max_length=limits.MAX_QUERY_CHARS, pattern=NO_NUL)]


class SolutionSearchRequest(_Strict):
    error: ErrorText = Field(description="The error message (or log excerpt) to find fixes for.")
    category: Name | None = None
    k: JsonInt = Field(5, ge=1, le=limits.MAX_K)


class PatternRef(_Strict):
    tag: Name
    category: Name = "general"


class ApplyRequest(_Strict):
    success: bool = Field(description="Whether applying the solution fixed the error.")
    project: ProjectName | None = Field(None, description="Where it was applied; pattern mining uses it.")
    error: ErrorText | None = Field(None, description="The error it was applied to.")
    context: Annotated[str, Field(max_length=limits.MAX_CONTEXT_CHARS)] | None = None
    pattern: PatternRef | None = Field(None, description="Also record the outcome for this pattern.")


class PatternDetectRequest(_Strict):
    error: ErrorText
    category: Name | None = None
    k: JsonInt = Field(5, ge=1, le=limits.MAX_K)
    min_score: float = Field(0.15, ge=0, le=1)
    solutions: JsonInt = Field(3, ge=0, le=10, description="Linked solutions to return per pattern.")


class PatternSolutionsRequest(PatternRef):
    k: JsonInt = Field(5, ge=1, le=limits.MAX_K)


class PatternLinkRequest(PatternRef):
    solution_id: Annotated[str, Field(min_length=1, max_length=128)]
    success: bool
    context: Annotated[str, Field(max_length=limits.MAX_CONTEXT_CHARS)] | None = None


class GoldenPathsRequest(_Strict):
    min_applications: JsonInt = Field(3, ge=1, le=1_000_000, description="Successes a pair needs.")
    category: Name | None = None
    k: JsonInt = Field(20, ge=1, le=limits.MAX_PAGE)


class DetectPatternsRequest(_Strict):
    min_occurrences: JsonInt = Field(2, ge=2, le=1_000_000)
    category: Name | None = None
    k: JsonInt = Field(20, ge=1, le=limits.MAX_PAGE)


# ---- results ----------------------------------------------------------------


class Solution(Fixpack):
    # A result, read back by clients from JSON (times as strings): not an edge input.
    model_config = ConfigDict(extra="forbid", strict=False)

    id: str
    success_rate: float = Field(description="Wilson lower bound of successes / applications.")
    created_at: datetime
    updated_at: datetime


class SolutionResult(BaseModel):
    solution: Solution
    explanation: str


class ImportResult(BaseModel):
    solution: Solution
    created: bool
    ignored_fields: list[str] = Field(default_factory=list)
    explanation: str


class DeleteResult(BaseModel):
    id: str
    deleted: bool
    explanation: str


class SolutionList(BaseModel):
    solutions: list[Solution]
    next_cursor: str | None = None
    explanation: str


class MatchComponents(BaseModel):
    regex: float
    vector: float
    keyword: float
    success: float


class SolutionMatch(BaseModel):
    solution: Solution
    score: float
    components: MatchComponents
    reasons: list[str]
    explanation: str


class SolutionSearchResult(BaseModel):
    results: list[SolutionMatch]
    explanation: str


class Pattern(BaseModel):
    tag: str
    category: str
    terms: list[str]
    occurrences: int
    projects: list[str]
    examples: list[str] = Field(description="Ids of memories in this cluster (most recent first).")
    description: str
    first_seen: datetime | None = None
    last_seen: datetime | None = None


class LinkedSolution(BaseModel):
    id: str
    title: str
    category: str
    success: int
    failure: int
    success_rate: float
    explanation: str


class LinkedFix(BaseModel):
    memory_id: str
    project: str | None = None
    content: str | None = None
    success: int
    failure: int
    success_rate: float
    explanation: str


class PatternComponents(BaseModel):
    vector: float
    terms: float


class PatternMatch(BaseModel):
    pattern: Pattern
    score: float
    components: PatternComponents
    matched_terms: list[str]
    solutions: list[LinkedSolution]
    fixes: list[LinkedFix]
    explanation: str


class PatternDetectResult(BaseModel):
    results: list[PatternMatch]
    explanation: str


class PatternSolutionsResult(BaseModel):
    pattern: Pattern
    solutions: list[LinkedSolution]
    fixes: list[LinkedFix]
    explanation: str


class PatternLinkResult(BaseModel):
    pattern: Pattern
    link: LinkedSolution
    pattern_created: bool
    explanation: str


class GoldenPath(BaseModel):
    pattern: Pattern
    solution: LinkedSolution | None = None
    fix: LinkedFix | None = None
    success: int
    failure: int
    success_rate: float
    explanation: str


class GoldenPathsResult(BaseModel):
    paths: list[GoldenPath]
    explanation: str


class ApplyResult(BaseModel):
    solution: Solution
    pattern: Pattern | None = None
    explanation: str


class DetectPatternsResult(BaseModel):
    patterns: list[Pattern]
    scanned: int
    clusters: int
    linked: int
    explanation: str
