"""The shapes of solutions (fixpacks) and patterns that users see (pydantic v2, the edge).

A fixpack is ``title, description, category, component, tags, package_manager,
signatures[{text, regexes, meta}], steps[{step_order, kind, payload, description,
timeout_ms}], checks[{check_order, cmd, expect_substring | expect_exit_code, timeout_ms}]``.
Step kinds are ``cmd``, ``patch``, ``copy``, ``script`` and ``env``, each with its payload
model; an absent order is the item's place in the file. A file written for the Vector Bridge
(the original multi-project memory) reads as it is through :func:`read_fixpack_file`: its
names are mapped by :mod:`.fixpack_format`, and keys no model knows are kept under ``extra``
at their level (create and update refuse them instead). Every regex is compiled by
:mod:`.safe_regex` while validating, so a catastrophic pattern is refused before anything is stored.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, Mapping

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

from .. import limits
from ..errors import InvalidInput, from_validation_error
from ..models import (
    CURSOR_PATTERN, META_SCHEMA_EXTRA, NO_CONTROL, MetaObject, MetaValue, NO_NUL, JsonInt, ProjectName, Tag, check_meta_keys, json_int,
)
from . import fixpack_format
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


def _absent(value: Any) -> bool:
    return value is None


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
    """One level of a fixpack (the fixpack, a signature, step, payload or check).

    Names in ``NAMES`` are read as our fields (:mod:`.fixpack_format`). Validated with the
    context an import sets, keys this level does not know are kept under ``extra`` instead of
    refused; without it (create, update) they are refused by name.
    """

    # The types of known keys are not coerced: "5m" is no timeout and "0" no exit code.
    model_config = ConfigDict(strict=True)  # merged with _Strict's

    NAMES: ClassVar[Mapping[str, str]] = {}

    extra: Extra = Field(default_factory=dict, exclude_if=_empty,
                         description="Keys of an imported file that this format does not know, kept as written.")

    @model_validator(mode="before")
    @classmethod
    def _read_names(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict):
            return data
        data = cls._shape(fixpack_format.rename(data, cls.NAMES))
        if fixpack_format.keeping(info.context):
            data = fixpack_format.keep_unknown(data, frozenset(cls.model_fields))
        return data

    @classmethod
    def _shape(cls, data: dict[str, Any]) -> dict[str, Any]:
        return data

    @classmethod
    def renamed(cls, data: Any) -> list[str]:
        """The file's names this level reads as ours (for an import's explanation)."""
        return fixpack_format.renamed(data, cls.NAMES)


class Signature(_Kept):
    text: Annotated[str, Field(min_length=1, max_length=2000, pattern=NO_NUL)] = Field(
        description="An error message this solution fixes, as it is usually seen.")
    regexes: list[Regex] = Field(default_factory=list, max_length=MAX_REGEXES,
                                 description="Patterns (RE2 syntax) that identify the error.")
    meta: SignatureMeta = Field(default_factory=SignatureMeta)


FilePath = Annotated[str, Field(min_length=1, max_length=limits.MAX_PATH_CHARS, pattern=NO_NUL)]
Command = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
Source = Annotated[str, Field(min_length=1, max_length=MAX_PAYLOAD_CHARS, pattern=NO_NUL)]
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
EnvName = Annotated[str, Field(min_length=1, max_length=256, pattern=ENV_NAME)]
EnvValue = Annotated[str, Field(max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]


def _optional(kind: Any, description: str) -> Any:
    """An optional payload field, left out of the stored payload when not given."""
    return Annotated[kind | None, Field(None, exclude_if=_absent, description=description)]


class CmdPayload(_Kept):
    """Run a shell command (``run`` in a Vector Bridge file)."""

    NAMES = fixpack_format.PAYLOAD_NAMES["cmd"]
    command: Command
    cwd: _optional(FilePath, "Folder to run it in, relative to the project root.")


def _given(*names: str) -> dict[str, Any]:
    """JSON Schema for "these keys are present as strings" (null counts as absent, as in the models)."""
    return {"required": list(names), "properties": {n: {"type": "string"} for n in names}}


class PatchPayload(_Kept):
    """Change a file: replace ``search`` by ``replace`` in ``file``, or apply a unified ``diff``
    (the Vector Bridge's shape, where ``file`` is optional: the diff names its files)."""

    # The shapes _one_shape checks, stated in the schema.
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        {**_given("diff"), "not": {"anyOf": [_given("search"), _given("replace")]}},
        {**_given("file", "search", "replace"), "not": _given("diff")}]})

    NAMES = fixpack_format.PAYLOAD_NAMES["patch"]
    file: _optional(FilePath, "The file to change.")
    search: _optional(Annotated[str, Field(min_length=1, max_length=MAX_PAYLOAD_CHARS)], "Text to find.")
    replace: _optional(Annotated[str, Field(max_length=MAX_PAYLOAD_CHARS)], "Text to put in its place.")
    diff: _optional(Source, "A unified diff.")

    @model_validator(mode="after")
    def _one_shape(self) -> "PatchPayload":
        if self.diff is not None:
            if self.search is not None or self.replace is not None:
                raise ValueError("give a diff, or search and replace, not both")
        elif self.file is None or self.search is None or self.replace is None:
            missing = [n for n in ("file", "search", "replace") if getattr(self, n) is None]
            raise ValueError(f"needs diff, or file, search and replace (missing {', '.join(missing)})")
        return self


class CopyPayload(_Kept):
    """Copy a file or folder (``from``/``to`` and ``source``/``destination`` read as ``src``/``dest``)."""

    NAMES = fixpack_format.PAYLOAD_NAMES["copy"]
    src: FilePath
    dest: FilePath


class ScriptPayload(_Kept):
    """Run a script: its text (``script``, or ``run``/``code``) or a ``file`` of the project."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [_given("script"), _given("file")]})

    NAMES = fixpack_format.PAYLOAD_NAMES["script"]
    script: _optional(Source, "The script's text.")
    file: _optional(FilePath, "A script file to run, relative to the project root.")
    interpreter: _optional(Name, "What runs it (bash, node, python, ...); absent: sh.")
    cwd: _optional(FilePath, "Folder to run it in, relative to the project root.")

    @model_validator(mode="after")
    def _script_or_file(self) -> "ScriptPayload":
        if (self.script is None) == (self.file is None):
            raise ValueError("give the script's text (script) or a file, one of them")
        return self


class EnvPayload(_Kept):
    """Set environment variables: ``vars`` {NAME: value}, or one ``name`` (or ``key``) and ``value``."""

    NAMES = fixpack_format.PAYLOAD_NAMES["env"]
    # Every key a name (pydantic states the key rule as patternProperties only, which lets other keys by).
    vars: dict[EnvName, EnvValue] = Field(min_length=1, max_length=100, json_schema_extra={
        "additionalProperties": False, "propertyNames": {"minLength": 1, "maxLength": 256, "pattern": ENV_NAME}})
    file: _optional(FilePath, "A dotenv file to write them to; absent: the environment the project runs in.")

    @classmethod
    def _shape(cls, data: dict[str, Any]) -> dict[str, Any]:
        if "name" not in data and "value" not in data:
            return data
        if "vars" in data:
            raise ValueError("give vars, or name and value, not both")
        if "name" not in data or "value" not in data:
            raise ValueError("name and value go together")
        rest = {k: v for k, v in data.items() if k not in ("name", "value")}
        if not isinstance(data["name"], str):
            raise ValueError("name must be a string")
        return {**rest, "vars": {data["name"]: data["value"]}}

    @classmethod
    def renamed(cls, data: Any) -> list[str]:
        names = super().renamed(data)
        if isinstance(data, dict) and ("name" in data or "key" in data):
            names.append("name and value as vars")
        return names


PAYLOADS: Mapping[str, type[_Kept]] = {
    "cmd": CmdPayload, "patch": PatchPayload, "copy": CopyPayload, "script": ScriptPayload, "env": EnvPayload,
}
SHAPES = {"cmd": "{command (or run), cwd?}", "patch": "{file, search, replace} or {diff, file?}",
          "copy": "{src, dest} (or from, to)", "script": "{script (or run) or file, interpreter?, cwd?}",
          "env": "{vars: {NAME: value}, file?} or {name, value}"}
assert tuple(PAYLOADS) == fixpack_format.STEP_KINDS


def _first_error(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    return f"payload{'.' + where if where else ''}: {message}"


# The bounds go on the integer itself: on the union pydantic checks them but states them wrongly.
Order = Annotated[Annotated[int, Field(ge=0, le=10_000), BeforeValidator(json_int)] | None, Field(
    None, description="Absent: its place in the file (1, 2, ...).")]


def _payload_rules() -> dict[str, Any]:
    # The payload each kind needs, stated in the schema as the validator below checks it.
    return {"anyOf": [{"properties": {"kind": {"const": kind}, "payload": _inline(model)}}
                      for kind, model in PAYLOADS.items()]}


def _inline(model: type[_Kept]) -> dict[str, Any]:
    # Embedded in Step's own schema, a payload's schema can carry no $defs of its own: its kept
    # keys (MetaValue, recursive) are stated on Step's 'extra' fields; here an object suffices.
    schema = model.model_json_schema()
    schema.pop("$defs", None)
    schema["properties"]["extra"] = {"type": "object", "description": "Keys kept from an imported file.", **META_SCHEMA_EXTRA}
    return schema


class Step(_Kept):
    model_config = ConfigDict(json_schema_extra=_payload_rules())

    _placed: bool = PrivateAttr(False)  # its order was its place in the file
    _renamed: list[str] = PrivateAttr(default_factory=list)  # payload names read as ours

    step_order: Order
    kind: Literal["cmd", "patch", "copy", "script", "env"]
    payload: dict[str, Any] = Field(description="By kind: " + "; ".join(f"{k} {v}" for k, v in SHAPES.items()))
    description: LongText | None = None
    timeout_ms: Timeout = DEFAULT_TIMEOUT_MS

    @model_validator(mode="after")
    def _payload_fits_kind(self, info: ValidationInfo) -> "Step":
        model = PAYLOADS[self.kind]
        self._renamed = [f"payload.{name}" for name in model.renamed(self.payload)]
        try:
            payload = model.model_validate(self.payload, context=info.context)
        except ValidationError as exc:
            raise PydanticCustomError("payload", "{detail}", {
                "detail": f"{_first_error(exc)} ({self.kind} payloads are {SHAPES[self.kind]})"}) from None
        self.payload = payload.model_dump(mode="json")
        return self

    def summary(self) -> str:
        """What the step does, in one line (for text output)."""
        p = self.payload
        if self.kind == "copy":
            return f"copy {p['src']} to {p['dest']}"
        if self.kind == "env":
            return "set " + ", ".join(p["vars"])
        what = p.get("command") or p.get("script") or p.get("file") or ("a diff" if p.get("diff") else "")
        return self.description or what


class Check(_Kept):
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        {"required": ["expect_substring"], "properties": {"expect_substring": {"type": "string"}}},
        {"required": ["expect_exit_code"], "properties": {"expect_exit_code": {"type": "integer"}}}]})

    _placed: bool = PrivateAttr(False)

    check_order: Order
    cmd: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NO_NUL)]
    expect_substring: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)] | None = None
    expect_exit_code: Annotated[int, Field(ge=0, le=255), BeforeValidator(json_int)] | None = None
    timeout_ms: Timeout = DEFAULT_TIMEOUT_MS

    @model_validator(mode="after")
    def _expects_something(self) -> "Check":
        if self.expect_substring is None and self.expect_exit_code is None:
            raise ValueError("a check needs expect_substring or expect_exit_code")
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


def kept_keys(fixpack: "Fixpack") -> list[str]:
    """Where the fixpack keeps keys its file had and this format does not know, in file order."""
    found = list(fixpack.extra)
    for name in ("signatures", "steps", "checks"):
        for place, item in enumerate(getattr(fixpack, name)):
            found += [f"{name}[{place}].{key}" for key in item.extra]
            if name == "steps":
                found += [f"steps[{place}].payload.{key}" for key in item.payload.get(fixpack_format.EXTRA, {})]
    return found


class Fixpack(_Kept):
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

    _kept: list[str] = PrivateAttr(default_factory=list)
    _numbered: list[str] = PrivateAttr(default_factory=list)
    _renamed: list[str] = PrivateAttr(default_factory=list)

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
    def _steps_placed(cls, steps: list[Step]) -> list[Step]:
        return _place(steps, "step_order")

    @field_validator("checks")
    @classmethod
    def _checks_placed(cls, checks: list[Check]) -> list[Check]:
        return _place(checks, "check_order")

    @model_validator(mode="after")
    def _ordered(self) -> "Fixpack":
        # Named before sorting, so places are the file's.
        self._kept = kept_keys(self)
        self._numbered = [f"{name}[{place}]" for name in ("steps", "checks")
                          for place, item in enumerate(getattr(self, name)) if item._placed]
        self._renamed = [f"steps[{place}].{name}" for place, step in enumerate(self.steps) for name in step._renamed]
        self.steps = sorted(self.steps, key=lambda s: s.step_order)
        self.checks = sorted(self.checks, key=lambda c: c.check_order)
        return self

    @property
    def kept(self) -> list[str]:
        """Keys of the file kept under ``extra`` (an import names them)."""
        return list(self._kept)

    @property
    def renamed(self) -> list[str]:
        """Names of the file read as ours (``steps[0].payload.run as command``)."""
        return list(self._renamed)

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
    (the Vector Bridge's names allowed) and any keys of its own, which are kept. Read by
    :func:`read_fixpack_file`, not by this model; an array is taken only to be refused there
    (an edge that expects an object may otherwise take an array's first item)."""

    model_config = ConfigDict(json_schema_extra=_an_object)


def read_fixpack_file(body: Any) -> Fixpack:
    """A fixpack file as it is: the Vector Bridge's names read as ours, unknown keys kept
    under ``extra`` at every level (not refused). A wrong type of a known key is InvalidInput."""
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
    kept_fields: list[str] = Field(default_factory=list, description=(
        "Keys of the file this format does not know, kept under 'extra' where they were (steps[0]._comment)."))
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
