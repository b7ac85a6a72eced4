"""The Capsule export format: JSON Lines, one self-contained row per line.

The first line is the header (``format``, ``version``, the tenant and project exported),
the last the end line (how many rows of each kind came): a file without it was cut short.
Between them, in this order: projects, memories (each page followed by its memories'
feedback), audit records, solutions, solution applications, patterns, pattern links and
link evidence. Every row is a pydantic model here, strict and closed: an unknown field is
refused with its name, a wrong type is never coerced (an integer is one as JSON Schema reads it:
5.0 is 5). The sync exchange's OpenAPI schema of a memory row is this module's, generated.

Vectors are base64 of little-endian float32 with their ``dims`` and ``model`` beside them.
Times are ISO 8601 with their UTC offset. ``purge_after`` on a forgotten memory is derived
(when the retention job deletes it for good) and ignored on import.

Version 2 (governance, additive: every version 1 file is a valid version 2 file): a memory may
carry ``retention``, ``expires_at``, ``supersedes`` and ``superseded_by`` (and ``visibility`` and
``subject``: a row without them is a private memory about no subject); ``version`` rows (after
the evidence) hold the earlier versions of updated memories; audit rows carry governance
actions too (update, revert, supersede, retention, expire, refuse).
"""

from __future__ import annotations

import base64
import difflib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from typing_extensions import TypeAliasType

from ..core import limits
from ..core.models import Content, MetaKey, PathText, ProjectName, RetentionClass, check_meta_keys, json_int
from ..core.schema_rules import SchemaOf, absent, given, together

FORMAT = "capsule-memory-export"
# Base64 with its padding: whole groups of four, the last one padded (the check and the schema read it).
BASE64_PATTERN = r"^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_BASE64 = re.compile(BASE64_PATTERN.removeprefix("^").removesuffix("$"))
VERSION = 2
VERSIONS_READ = (1, 2)
MAX_LINE_BYTES = 4 * 1024 * 1024  # a memory is at most 64 KB of text plus a vector and its meta

Id = Annotated[str, Field(min_length=1, max_length=256)]
Name = Annotated[str, Field(min_length=1, max_length=1024)]


# JSON integers, as JSON Schema reads one (5.0 is 5; "5", true and 5.5 are not), that the stores
# hold (a larger count was a 500 on import and sync).
Count = Annotated[int, Field(ge=0, lt=limits.INT_END), BeforeValidator(json_int)]
Dims = Annotated[int, Field(ge=1, le=16384), BeforeValidator(json_int)]
Positive = Annotated[int, Field(ge=1, lt=limits.INT_END), BeforeValidator(json_int)]
# base64 of float32; the check of its length against dims (a rule no JSON Schema states) is _check_vector's
Vector = Annotated[str, Field(max_length=1_000_000, json_schema_extra={"pattern": BASE64_PATTERN})]


def _meta_keys(meta: dict[str, Any]) -> dict[str, Any]:
    check_meta_keys(meta)  # the rules a stored memory's meta keeps (a document store would misread others)
    return meta


# What _meta_keys admits: any JSON whose object keys keep META_KEY_PATTERN at every level (its depth
# limit, MAX_META_DEPTH, is left unstated). Unlike a stored memory's meta, numbers are not bounded here.
ExportMeta = TypeAliasType(
    "ExportMeta", Annotated[dict[MetaKey, "ExportMetaValue"], Field(json_schema_extra={"additionalProperties": False})]
)
ExportMetaValue = TypeAliasType(
    "ExportMetaValue", "str | int | float | bool | None | list[ExportMetaValue] | ExportMeta"
)
Meta = Annotated[dict[str, Any], AfterValidator(_meta_keys), SchemaOf(ExportMeta)]


class _Row(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _decoded_size(encoded: str) -> int:
    """The bytes a base64 text decodes to, without decoding it (it is decoded once, on import)."""
    if not _BASE64.fullmatch(encoded):
        raise ValueError("the vector is not base64")
    return len(encoded) // 4 * 3 - encoded[-2:].count("=")


def _check_vector(encoded: str | None, dims: int | None, rows: int = 1) -> None:
    if (encoded is None) != (dims is None):
        raise ValueError("a vector and its dims come together (both or neither)")
    if encoded is not None and dims is not None:  # both or neither, as just checked
        size = _decoded_size(encoded)
        if size != rows * dims * 4:
            raise ValueError(f"the vector holds {size // 4} floats; dims {dims} x {rows} row(s) needs {rows * dims}")


class Header(_Row):
    kind: Literal["header"]
    format: Literal["capsule-memory-export"]
    version: Literal[1, 2]
    tenant: str
    project: str | None
    exported_at: datetime


class Project(_Row):
    kind: Literal["project"]
    name: ProjectName
    retention_limit: Positive | None


class Memory(_Row):
    # _vector's rules, as JSON Schema: a vector comes with its dims and the model that made it.
    model_config = ConfigDict(
        json_schema_extra={"allOf": [together("embedding", "dims"), {"anyOf": [absent("embedding"), given("model")]}]}
    )

    kind: Literal["memory"]
    id: Id
    project: ProjectName
    content: Content
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    path: PathText | None
    chunk_index: Count | None
    chunk_count: Count | None
    embedding: Vector | None
    dims: Dims | None
    model: str | None
    status: Literal["ready", "pending_embedding"]
    pinned: bool
    explanation: str | None
    meta: Meta
    helpful: Count
    unhelpful: Count
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    accessed_at: datetime | None
    deleted_at: datetime | None
    deleted_reason: str | None
    purge_after: datetime | None = None  # derived from deleted_at; ignored on import
    # version 2: governance (capsule.governance)
    retention: RetentionClass = "auto"
    expires_at: datetime | None = None
    supersedes: Id | None = None
    superseded_by: Id | None = None
    # version 2, later and as additive: who may read it (capsule.governance.visibility)
    visibility: Literal["private", "shared", "public"] = "private"
    subject: Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]*$")] | None = None

    @model_validator(mode="after")
    def _vector(self) -> Memory:
        _check_vector(self.embedding, self.dims)
        if self.embedding is not None and self.model is None:
            raise ValueError("model: a vector needs the id of the model that made it")
        return self


class Feedback(_Row):
    kind: Literal["feedback"]
    memory_id: Id
    helpful: bool
    context: str | None
    at: datetime


class Audit(_Row):
    kind: Literal["audit"]
    memory_id: Id
    project: ProjectName
    action: Annotated[str, Field(min_length=1, max_length=64)]
    actor: str
    reason: str
    at: datetime


class Solution(_Row):
    kind: Literal["solution"]
    id: Id
    title: Annotated[str, Field(min_length=1)]
    category: Annotated[str, Field(min_length=1)]
    body: dict[str, Any]
    success: Count
    failure: Count
    embeddings: Vector | None
    signatures: Count
    dims: Dims | None
    model: str | None
    created_at: datetime
    updated_at: datetime
    last_applied_at: datetime | None = None  # absent in exports made before solutions kept them
    verified_on: datetime | None = None

    @model_validator(mode="after")
    def _vectors(self) -> Solution:
        _check_vector(self.embeddings, self.dims, self.signatures)
        return self


class Application(_Row):
    kind: Literal["application"]
    id: Id
    solution_id: Id
    success: bool
    project: str | None
    error: str | None
    context: str | None
    at: datetime


class Pattern(_Row):
    kind: Literal["pattern"]
    tag: Name
    category: Name
    terms: list[str]
    occurrences: Count
    projects: list[str]
    examples: list[str]
    description: str
    embedding: Vector | None
    dims: Dims | None
    model: str | None
    first_seen: datetime | None
    last_seen: datetime | None
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="after")
    def _vector(self) -> Pattern:
        _check_vector(self.embedding, self.dims)
        return self


class Link(_Row):
    kind: Literal["link"]
    tag: Name
    category: Name
    target_kind: Literal["solution", "memory"]
    target_id: Id
    success: Count
    failure: Count
    last_at: datetime | None


class Evidence(_Row):
    kind: Literal["evidence"]
    tag: Name
    category: Name
    target_kind: Literal["solution", "memory"]
    target_id: Id
    evidence: Annotated[str, Field(min_length=1)]


class MemoryVersion(_Row):
    """Version 2: an earlier version of an updated memory (its current state is the memory row)."""

    kind: Literal["version"]
    memory_id: Id
    number: Positive
    project: ProjectName
    content: Content
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    path: PathText | None
    explanation: str | None
    meta: Meta
    retention: RetentionClass
    expires_at: datetime | None
    pinned: bool
    created_at: datetime | None
    replaced_at: datetime | None
    actor: str
    reason: str


class End(_Row):
    kind: Literal["end"]
    counts: dict[str, Count]


Row = Annotated[
    Header
    | Project
    | Memory
    | Feedback
    | Audit
    | Solution
    | Application
    | Pattern
    | Link
    | Evidence
    | MemoryVersion
    | End,
    Field(discriminator="kind"),
]
ROWS: dict[str, type[_Row]] = {
    m.model_fields["kind"].annotation.__args__[0]: m  # type: ignore[union-attr]
    for m in (
        Header,
        Project,
        Memory,
        Feedback,
        Audit,
        Solution,
        Application,
        Pattern,
        Link,
        Evidence,
        MemoryVersion,
        End,
    )
}
_ADAPTER: TypeAdapter[Any] = TypeAdapter(Row)


class BadRow(ValueError):
    """One line that is not a valid row: its field and why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


def _nearest(name: str, kind: Any) -> str:
    model = ROWS.get(kind) if isinstance(kind, str) else None
    known = [n for n in (model.model_fields if model else ())]
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _bad_row(exc: ValidationError, kind: Any) -> BadRow:
    err = exc.errors(include_url=False)[0]
    loc = [str(part) for part in err["loc"]]
    if loc and loc[0] in ROWS:  # the discriminated union names the model first
        loc = loc[1:]
    field = ".".join(loc) or "row"
    if err["type"] == "json_invalid":
        return BadRow("row", "not valid JSON (a truncated or damaged line)")
    if err["type"] == "extra_forbidden":
        return BadRow(field, f"unknown field '{field}'{_nearest(field, kind)}")
    if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return BadRow("kind", f"kind must be one of {', '.join(sorted(ROWS))}")
    return BadRow(field, err["msg"])


def parse_row(line: str | bytes) -> _Row:
    """One line as its row model, or :class:`BadRow` naming the field."""
    if len(line) > MAX_LINE_BYTES:
        raise BadRow("row", f"the line is over {MAX_LINE_BYTES} bytes")
    try:
        return _ADAPTER.validate_json(line)
    except ValidationError as exc:
        kind = None
        if exc.errors()[0]["type"] != "json_invalid":
            try:
                kind = json.loads(line).get("kind")
            except (ValueError, AttributeError):
                pass
        raise _bad_row(exc, kind) from None


# ---- plain values <-> line text (exports build dicts: no model per row) ---------------


def encode_bytes(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def decode_bytes(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as exc:
        raise ValueError(f"not base64: {exc}") from None


def encode_vector(vector: np.ndarray | None) -> tuple[str | None, int | None]:
    """A vector (or a matrix: its rows one after another) as base64 and the row width."""
    if vector is None:
        return None, None
    array = np.asarray(vector, dtype="<f4")
    return encode_bytes(array.tobytes()), int(array.shape[-1])


def decode_vector(text: str | None, rows: int | None = None) -> np.ndarray | None:
    if text is None:
        return None
    vector = np.frombuffer(decode_bytes(text), dtype="<f4")
    return vector if rows is None else vector.reshape(rows, -1)


def when(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def dumps(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"


def read_lines(handle: Any) -> Iterator[bytes]:
    """The lines of a binary stream, never more than :data:`MAX_LINE_BYTES` + 1 of one in memory:
    the rest of a longer line is skipped (its prefix, too long, is refused by :func:`parse_row`)."""
    while line := handle.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := handle.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
        yield line
