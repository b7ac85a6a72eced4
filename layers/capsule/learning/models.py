"""The shapes of solutions (fixpacks) and patterns that users see (pydantic v2, the edge).

A fixpack is ``title, description, category, component, tags, project_root, repo_name,
package_manager, monorepo_tool, signatures[{text, regexes, meta}], steps[{step_order, kind,
payload, description, timeout_ms}], checks[{check_order, cmd, expect_substring |
expect_exit_code, timeout_ms}]`` (the Vector Bridge's schema, COMPAT.md §1.17). A step's payload
is stored as written and read through :func:`.fixpack_format.payload_view`; our own API takes
the kinds ``cmd``, ``patch``, ``copy``, ``script`` and ``env`` with the payloads of
:mod:`.payloads`, an import any kind and any payload object. An absent order is the item's place
in the file. A file written for the Vector Bridge (the original multi-project memory) reads as
it is through :func:`read_fixpack_file`: keys no model knows are kept under ``extra`` at their
level (create and update refuse them instead). Every regex is compiled by :mod:`.safe_regex`
while validating, so a catastrophic pattern is refused before anything is stored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    RootModel,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..core import limits
from ..core.errors import InvalidInput
from ..core.fielderrors import from_validation_error
from ..core.models import (
    CURSOR_PATTERN,
    META_SCHEMA_EXTRA,
    NO_CONTROL,
    NO_NUL,
    AwareDatetime,
    JsonInt,
    MetaObject,
    MetaValue,
    ProjectName,
    Tag,
    check_meta_keys,
    json_int,
)
from . import fixpack_format, payloads
from .safe_regex import compile_safe

MAX_FIXPACK_BYTES = 256 * 1024
MAX_SIGNATURES = 20
MAX_REGEXES = 10
MAX_STEPS = 50
MAX_CHECKS = 20
MAX_TIMEOUT_MS = 3_600_000
# The Vector Bridge's defaults (COMPAT §5): a step 120 s, a check 30 s.
STEP_TIMEOUT_MS = 120_000
CHECK_TIMEOUT_MS = 30_000
MAX_TEXT_CHARS = 8192


ShortText = Annotated[str, Field(min_length=1, max_length=256, pattern=NO_NUL)]
Name = Annotated[str, Field(min_length=1, max_length=128, pattern=NO_CONTROL)]
LongText = Annotated[str, Field(max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
Timeout = Annotated[int, Field(ge=1, le=MAX_TIMEOUT_MS, description="Milliseconds."), BeforeValidator(json_int)]


class _Strict(BaseModel):
    # strict: JSON types as the schema says ("yes" is not a boolean, "5" not an integer).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


def _empty(value: Any) -> bool:
    return not value


INT64 = 2**63


def _storable(value: Any, where: str = "extra") -> Any:
    """Kept keys go into both stores as they are: refuse what either would misread or refuse."""
    check_meta_keys(value, where)
    _check_numbers(value, where)
    return value


def _check_numbers(value: Any, where: str) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int) and not -INT64 <= value < INT64:
        raise ValueError(f"{where} holds an integer outside 64 bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} holds a number JSON cannot carry")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_numbers(item, f"{where}.{key}")
    elif isinstance(value, list):
        for item in value:
            _check_numbers(item, where)


class SignatureMeta(BaseModel):
    """Free metadata of a signature; ``min_score`` is the similarity that counts as a match."""

    model_config = ConfigDict(extra="allow", strict=True, json_schema_extra=META_SCHEMA_EXTRA)
    __pydantic_extra__: dict[str, MetaValue] = Field(init=False)

    min_score: float | None = Field(None, ge=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        # Keys as for any meta; values are MetaValue, which reads an integer beyond 64 bits as the
        # JSON number it is (a float), as a memory's meta does, since the schema allows that number.
        check_meta_keys(data, "signature meta")
        return data


def _regex(value: str) -> str:
    try:
        compile_safe(value)
    except InvalidInput as exc:  # a ValueError lets pydantic name the exact field
        raise ValueError(exc.message) from None
    return value


Regex = Annotated[str, Field(min_length=1, json_schema_extra={"format": "regex"}), AfterValidator(_regex)]


# Kept keys follow the meta rules at every level (MetaObject states them in the schema too).
Extra = Annotated[MetaObject, AfterValidator(_storable)]


class _Kept(_Strict):
    """One level of a fixpack (the fixpack, a signature, step or check).

    Validated with the context an import sets, keys this level does not know are kept under
    ``extra`` instead of refused; without it (create, update) they are refused by name. A step's
    payload is not a level: it is kept whole, as written (:mod:`.fixpack_format`).
    """

    # The types of known keys are not coerced: "5m" is no timeout and "0" no exit code.
    model_config = ConfigDict(strict=True)  # merged with _Strict's

    # A result read back from a store or a client: whatever an import kept reads back.
    LENIENT: ClassVar[bool] = False

    extra: Extra = Field(
        default_factory=dict,
        exclude_if=_empty,
        description="Keys of an imported file that this format does not know, kept as written.",
    )

    @model_validator(mode="before")
    @classmethod
    def _keep_unknown(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, dict) and fixpack_format.keeping(info.context):
            data = fixpack_format.keep_unknown(data, frozenset(cls.model_fields))
        return data

    @classmethod
    def _lenient(cls, info: ValidationInfo) -> bool:
        """Whether this is an import or a read-back, which keep what our own API would refuse."""
        return cls.LENIENT or fixpack_format.keeping(info.context)


class Signature(_Kept):
    text: Annotated[str, Field(min_length=1, max_length=2000, pattern=NO_NUL)] = Field(
        description="An error message this solution fixes, as it is usually seen."
    )
    regexes: list[Regex] = Field(
        default_factory=list, max_length=MAX_REGEXES, description="Patterns (RE2 syntax) that identify the error."
    )
    meta: SignatureMeta = Field(default_factory=SignatureMeta)


# Any JSON object, kept as written, within the rules both stores need (as kept keys are).
Payload = Annotated[MetaObject, AfterValidator(lambda value: _storable(value, "payload"))]


# The bounds go on the integer itself: on the union pydantic checks them but states them wrongly.
Order = Annotated[
    Annotated[int, Field(ge=0, le=10_000), BeforeValidator(json_int)] | None,
    Field(None, description="Absent: its place in the file (1, 2, ...)."),
]


def _payload_rules() -> dict[str, Any]:
    # The payload each kind takes, stated in the schema as the validator below checks it.
    return {
        "anyOf": [
            {"properties": {"kind": {"const": kind}, "payload": payloads.payload_schema(kind)}}
            for kind in fixpack_format.STEP_KINDS
        ]
    }


StepKind = Annotated[
    str,
    Field(min_length=1, max_length=64, pattern=NO_CONTROL, json_schema_extra={"enum": list(fixpack_format.STEP_KINDS)}),
]


class Step(_Kept):
    """One step. Its payload is stored as written (``run`` stays ``run``); :meth:`view` reads it.
    Our own API takes the five kinds with the payloads of :mod:`.payloads`; an import keeps any
    kind and any payload object, as the Vector Bridge did."""

    model_config = ConfigDict(json_schema_extra=_payload_rules())

    _placed: bool = PrivateAttr(False)  # its order was its place in the file

    step_order: Order
    kind: StepKind
    payload: Payload = Field(
        description="By kind: "
        + "; ".join(f"{k} {v}" for k, v in payloads.SHAPES.items())
        + ". Any payload may carry a description."
    )
    description: LongText | None = None
    timeout_ms: Timeout = STEP_TIMEOUT_MS

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str, info: ValidationInfo) -> str:
        if kind in fixpack_format.STEP_KINDS or cls._lenient(info):
            return kind
        raise ValueError(
            f"must be one of {', '.join(fixpack_format.STEP_KINDS)} "
            "(an import keeps a step of any other kind as written)"
        )

    @model_validator(mode="after")
    def _payload_fits_kind(self, info: ValidationInfo) -> Step:
        if self._lenient(info):
            return self
        try:
            payloads.check_payload(self.kind, self.payload)
        except ValueError as exc:
            raise PydanticCustomError(
                "payload", "{detail}", {"detail": f"{exc} ({self.kind} payloads are {payloads.SHAPES[self.kind]})"}
            ) from None
        return self

    def view(self) -> dict[str, Any]:
        """The payload as our code reads it (:func:`.fixpack_format.payload_view`)."""
        return fixpack_format.payload_view(self.kind, self.payload)

    def summary(self) -> str:
        """What the step does, in one line (for text output)."""
        v = self.view()
        if self.kind == "copy":
            return f"copy {v['from']} to {v['to']}"
        if self.kind == "env" and isinstance(v["set"], Mapping):
            return "set " + ", ".join(map(str, v["set"]))
        what = v["command"] or v["script"] or v["file"] or ("a diff" if v["diff"] else "")
        return self.description or v["description"] or str(what or f"a {self.kind} step")


class StoredStep(Step):
    """A step as stored: any kind and payload an import kept read back as they are."""

    model_config = ConfigDict(json_schema_extra=None)
    LENIENT = True

    kind: Annotated[str, Field(min_length=1, max_length=64, pattern=NO_CONTROL)]


class Check(_Kept):
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["expect_substring"], "properties": {"expect_substring": {"type": "string"}}},
                {"required": ["expect_exit_code"], "properties": {"expect_exit_code": {"type": "integer"}}},
            ]
        }
    )

    _placed: bool = PrivateAttr(False)

    check_order: Order
    cmd: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
    expect_substring: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)] | None = None
    expect_exit_code: Annotated[int, Field(ge=0, le=255), BeforeValidator(json_int)] | None = None
    timeout_ms: Timeout = CHECK_TIMEOUT_MS

    @model_validator(mode="after")
    def _expects_something(self, info: ValidationInfo) -> Check:
        if self.expect_substring is None and self.expect_exit_code is None:
            if not self._lenient(info):
                raise ValueError("a check needs expect_substring or expect_exit_code")
            self.expect_exit_code = 0  # the Vector Bridge's default: a file may give neither
        return self


def _place(items: list, attribute: str) -> list:
    """Give items without an order their place in the file (1, 2, ...). Equal orders are allowed
    and keep their order in the file (the fixpack sorts stably once it has named kept keys), so
    no two orders can make a fixpack invalid, a rule no schema could state."""
    for place, item in enumerate(items):
        if getattr(item, attribute) is None:
            setattr(item, attribute, place + 1)
            item._placed = True
    return items


def kept_keys(fixpack: Fixpack) -> list[str]:
    """Where the fixpack keeps keys its file had and this format does not know, in file order
    (a step payload's stay in the payload; those of the other levels are under 'extra')."""
    found = list(fixpack.extra)
    for name in ("signatures", "steps", "checks"):
        for place, item in enumerate(getattr(fixpack, name)):
            found += [f"{name}[{place}].{key}" for key in item.extra]
            if name == "steps" and item.kind in fixpack_format.STEP_KINDS:
                found += [
                    f"steps[{place}].payload.{key}" for key in fixpack_format.interpret(item.kind, item.payload).unknown
                ]
    return found


Stamp = AwareDatetime | None


class Fixpack(_Kept):
    """One solution: how to recognise an error and the ordered steps and checks that fix it.

    Every top-level key of the Vector Bridge's schema is a field. The counts and the two times
    are the solution's record (an importer may set them; ``solution_apply`` changes them); they
    are not part of its stored content."""

    title: ShortText
    description: LongText = ""
    category: Name = "general"
    component: Name | None = Field(
        None, description="What part of a system it fixes; a search naming a component also finds solutions with none."
    )
    tags: list[Tag] = Field(default_factory=list, max_length=limits.MAX_TAGS)
    project_root: Annotated[str, Field(min_length=1, max_length=limits.MAX_PATH_CHARS, pattern=NO_NUL)] | None = Field(
        None, description="The project it was written for; absent: any."
    )
    repo_name: Name | None = None
    package_manager: Name | None = None
    monorepo_tool: Name | None = None
    signatures: list[Signature] = Field(max_length=MAX_SIGNATURES, json_schema_extra={"minItems": 1})
    steps: list[Step] = Field(default_factory=list, max_length=MAX_STEPS)
    checks: list[Check] = Field(default_factory=list, max_length=MAX_CHECKS)
    success_count: JsonInt = Field(0, ge=0, le=limits.MAX_COUNT)
    failure_count: JsonInt = Field(0, ge=0, le=limits.MAX_COUNT)
    last_applied_at: Stamp = Field(None, description="When an outcome was last recorded (solution_apply).")
    verified_on: Stamp = Field(None, description="When it last worked (solution_apply with success).")

    _kept: list[str] = PrivateAttr(default_factory=list)
    _numbered: list[str] = PrivateAttr(default_factory=list)
    _interpreted: list[str] = PrivateAttr(default_factory=list)
    _doubled: list[str] = PrivateAttr(default_factory=list)
    _other_kinds: list[str] = PrivateAttr(default_factory=list)

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

    @field_validator("description", mode="before")
    @classmethod
    def _null_description(cls, value: Any, info: ValidationInfo) -> Any:
        # A Vector Bridge file's or database's null description is none (""); our own API takes
        # the string its schema states, as for every other text field.
        return "" if value is None and cls._lenient(info) else value

    @field_validator("signatures")
    @classmethod
    def _some_signature(cls, signatures: list[Signature], info: ValidationInfo) -> list[Signature]:
        # The Vector Bridge accepted a solution with none (found by no search, but kept).
        if not signatures and not cls._lenient(info):
            raise ValueError("a solution needs at least one signature")
        return signatures

    @field_validator("steps")
    @classmethod
    def _steps_placed(cls, steps: list[Step]) -> list[Step]:
        return _place(steps, "step_order")

    @field_validator("checks")
    @classmethod
    def _checks_placed(cls, checks: list[Check]) -> list[Check]:
        return _place(checks, "check_order")

    @model_validator(mode="after")
    def _ordered(self) -> Fixpack:
        # Named before sorting, so places are the file's.
        self._kept = kept_keys(self)
        self._numbered = [
            f"{name}[{place}]"
            for name in ("steps", "checks")
            for place, item in enumerate(getattr(self, name))
            if item._placed
        ]
        for place, step in enumerate(self.steps):
            if step.kind not in fixpack_format.STEP_KINDS:
                self._other_kinds.append(f"steps[{place}] ({step.kind})")
                continue
            reading = fixpack_format.interpret(step.kind, step.payload)
            self._interpreted += [f"steps[{place}].payload.{name}" for name in reading.interpreted]
            self._doubled += [
                f"steps[{place}].payload gives both {' and '.join(names)}: read {reading.used[field]}"
                for field, names in reading.doubled.items()
            ]
        self.steps = sorted(self.steps, key=lambda s: s.step_order)  # type: ignore[arg-type, return-value]  # _place gave each one
        self.checks = sorted(self.checks, key=lambda c: c.check_order)  # type: ignore[arg-type, return-value]  # as steps
        return self

    @property
    def kept(self) -> list[str]:
        """Keys of the file this format does not know, kept where they were (see :func:`kept_keys`)."""
        return list(self._kept)

    @property
    def interpreted(self) -> list[str]:
        """Payload spellings read as another field name (``steps[0].payload.run as command``)."""
        return list(self._interpreted)

    @property
    def doubled(self) -> list[str]:
        """Payloads giving two spellings of one field: both are kept, the view reads one."""
        return list(self._doubled)

    @property
    def other_kinds(self) -> list[str]:
        """Steps of a kind this format does not interpret, kept as written (``steps[2] (shell)``)."""
        return list(self._other_kinds)

    @property
    def numbered(self) -> list[str]:
        """Steps and checks that had no order and were given their place in the file."""
        return list(self._numbered)


def _an_object(schema: dict[str, Any]) -> None:
    # The document says what is accepted: an object (an array is read only to be refused by name).
    schema.pop("anyOf", None)
    schema["type"] = "object"


class FixpackFile(RootModel[dict[str, Any] | list[Any]]):
    """The body of an import: a fixpack file, a JSON object with the fields of :class:`Fixpack`
    (any step kind and payload, the Vector Bridge's spellings included) and any keys of its own,
    which are kept. Read by :func:`read_fixpack_file`, not by this model; an array is taken only
    to be refused there (an edge that expects an object may otherwise take an array's first item)."""

    model_config = ConfigDict(json_schema_extra=_an_object)


def read_fixpack_file(body: Any) -> Fixpack:
    """A fixpack file as it is: step payloads kept as written (any kind, any object), unknown
    keys of the other levels kept under ``extra`` (not refused). A wrong type of a known key of
    the fixpack, a signature, step or check is InvalidInput."""
    if not isinstance(body, dict):
        raise InvalidInput("a fixpack is a JSON object", field="body")
    try:
        return Fixpack.model_validate(body, context={fixpack_format.KEEP_UNKNOWN: True})
    except ValidationError as exc:
        raise from_validation_error(exc) from exc


# ---- requests ---------------------------------------------------------------


class ListSolutionsRequest(_Strict):
    category: Name | None = None
    cursor: str | None = Field(None, max_length=limits.MAX_CURSOR_CHARS, pattern=CURSOR_PATTERN)
    limit: JsonInt = Field(limits.DEFAULT_PAGE, ge=1, le=limits.MAX_PAGE)


ErrorText = Annotated[str, Field(min_length=1, max_length=limits.MAX_QUERY_CHARS, pattern=NO_NUL)]


class SolutionSearchRequest(_Strict):
    error: ErrorText = Field(description="The error message (or log excerpt) to find fixes for.")
    category: Name | None = None
    component: Name | None = Field(None, description="Only solutions for this component, or for none named.")
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
    category: Name | None = Field(None, description="Absent: the pattern's tag in every category.")  # type: ignore[assignment]
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
    # A result, read back by clients from JSON (times as strings): not an edge input. What an
    # import kept (any step kind and payload) reads back as it is.
    model_config = ConfigDict(extra="forbid", strict=False)
    LENIENT = True

    steps: list[StoredStep] = Field(default_factory=list, max_length=MAX_STEPS)  # type: ignore[assignment]  # lenient steps

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
    kept_fields: list[str] = Field(
        default_factory=list,
        description=(
            "Keys of the file this format does not know, kept where they were: a step payload's in the payload "
            "(steps[0].payload.recursive), the others under 'extra' at their level (steps[0]._comment)."
        ),
    )
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
