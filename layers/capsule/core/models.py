"""The shapes users see: requests, memories and results (pydantic v2).

These models are the edge of the library: the HTTP handlers, the MCP tools and the
CLI validate into them, and the OpenAPI document is generated from them. Inside the
service and the stores, memories travel as plain :class:`capsule.core.records.MemoryRecord`.
Every limit comes from :mod:`capsule.core.limits`, and every violation is a validation
error that names its field.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import TypeAliasType

from . import limits, project_identity

# What a pattern means, for the error a caller reads: models fill the registry fielderrors reads.
from .fielderrors import PATTERN_MESSAGES
from .schema_rules import any_given

Outcome = Literal["success", "failure", "unknown"]
from .retention import EffectiveClass, RetentionClass  # noqa: E402  (one place for the classes)
from .retention_policy import EXPIRY_SCHEMA  # noqa: E402  (the expiry rules the service checks)

# A page's position: the last item's creation time (epoch seconds) and its id as hex; any
# string of this shape is a position, so a client can never send one that is refused.
CURSOR_PATTERN = r"^[0-9]{1,12}\.[0-9]{6}~([0-9a-f]{2}){1,512}$"


def _utf8_within(max_bytes: int, what: str):
    def check(value: str) -> str:
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise ValueError(f"{what} is {size} bytes; the limit is {max_bytes} bytes")
        return value

    return check


def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


# Years 0002-9998 only: with any UTC offset the instant stays a datetime Python can hold, so a
# stored time can always be read back (9999-12-31T23:59:59-14:00 is in year 10000 in UTC).
DATETIME_PATTERN = (
    r"^(000[2-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-"
    r"[0-9]{2}-[0-9]{2}T"
)
_DATETIME_RE = re.compile(DATETIME_PATTERN)


def _iso_text(value: Any) -> Any:
    # A JSON datetime is a string: numbers (epoch seconds) are not converted, as the schema says.
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise ValueError("must be an RFC 3339 date-time string")
    if not _DATETIME_RE.match(value):
        raise ValueError("must be an RFC 3339 date-time (YYYY-MM-DDThh:mm:ss with an offset) in years 0002-9998")
    return value


def json_int(value: Any) -> Any:
    # JSON has one number type: 5.0 is the integer 5 (as JSON Schema's "integer" says), but
    # true, "5" and 5.5 are not integers.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


JsonInt = Annotated[int, BeforeValidator(json_int)]

# Names become parts of store keys (the MongoDB ids join them with a control character).
NO_CONTROL = r"^[^\x00-\x1f\x7f]*$"
NO_NUL = r"^[^\x00]*$"

ProjectName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=limits.MAX_PROJECT_CHARS,
        pattern=NO_CONTROL,
        description="Project name, e.g. a repository path (no control characters).",
    ),
    # One checkout, one project: "/a/b/" and "/a//b" name "/a/b" (capsule.core.project_identity).
    AfterValidator(project_identity.canonical),
]
Content = Annotated[
    str,
    Field(
        min_length=1, max_length=limits.MAX_CONTENT_BYTES, description="The memory's text (at most 64 KiB of UTF-8)."
    ),
    AfterValidator(_utf8_within(limits.MAX_CONTENT_BYTES, "content")),
]
IngestText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=limits.MAX_INGEST_BYTES,
        description="Text to chunk and store (at most 1 MiB of UTF-8).",
    ),
    AfterValidator(_utf8_within(limits.MAX_INGEST_BYTES, "text")),
]
PathText = Annotated[str, Field(max_length=limits.MAX_PATH_CHARS, pattern=NO_NUL)]
Tag = Annotated[str, Field(min_length=1, max_length=limits.MAX_TAG_CHARS, pattern=NO_NUL)]
AwareDatetime = Annotated[
    datetime,
    Field(strict=False, json_schema_extra={"pattern": DATETIME_PATTERN}),
    BeforeValidator(_iso_text),
    AfterValidator(_aware),
]
# A key that a document store reads as written: not empty, no leading '$', no '.' or NUL.
META_KEY_PATTERN = r"^[^$.\x00][^.\x00]*$"
# Meta values are any JSON whose object keys keep the key rules at every level; the schema
# says so too (MetaValue), so a client generated from it never sends a key that is refused.
MetaKey = Annotated[str, Field(pattern=META_KEY_PATTERN)]
MetaObject = Annotated[dict[MetaKey, "MetaValue"], Field(json_schema_extra={"additionalProperties": False})]
# Integers fit in 64 bits: MongoDB (BSON) holds no larger, and a value must store in either backend.
MetaInt = Annotated[int, Field(ge=-limits.INT_END, lt=limits.INT_END)]
MetaValue = TypeAliasType("MetaValue", "str | MetaInt | float | bool | None | list[MetaValue] | MetaObject")
META_SCHEMA_EXTRA: dict[str, Any] = {"propertyNames": {"pattern": META_KEY_PATTERN}}
_META_KEY = re.compile(META_KEY_PATTERN)  # check_meta_keys reads the pattern the schema states
PATTERN_MESSAGES.update(
    {
        NO_CONTROL: "must not contain control characters",
        NO_NUL: "must not contain NUL characters",
        CURSOR_PATTERN: "is not a cursor this service returned",
        META_KEY_PATTERN: "keys must not be empty, start with '$', or contain '.' or NUL",
    }
)


def check_meta_keys(value: Any, where: str = "meta", depth: int = 0) -> None:
    """Refuse keys a document store would misread: ``$``-prefixed, dotted or NUL."""
    if depth > limits.MAX_META_DEPTH:
        raise ValueError(f"{where} is nested deeper than {limits.MAX_META_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where} keys must be strings")
            if not _META_KEY.fullmatch(key):
                raise ValueError(
                    f"key {key!r} in {where} is not allowed (empty, starts with '$', or contains '.' or NUL)"
                )
            check_meta_keys(item, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for item in value:
            check_meta_keys(item, where, depth + 1)


class MemoryMeta(BaseModel):
    """What kind of memory this is. Unknown keys are kept, within the key rules."""

    model_config = ConfigDict(extra="allow", strict=True, json_schema_extra=META_SCHEMA_EXTRA)
    __pydantic_extra__: dict[str, MetaValue] = Field(init=False)

    type: str | None = Field(None, max_length=64, description="decision, code, error, fix, note, digest, ...")
    component: str | None = Field(None, max_length=128)
    category: str | None = Field(None, max_length=128)
    tags: list[Tag] = Field(default_factory=list, max_length=limits.MAX_TAGS)
    language: str | None = Field(None, max_length=64)
    outcome_status: Outcome = "unknown"
    author: str | None = Field(None, max_length=256, description="Who wrote it: an agent or a person.")
    session: str | None = Field(None, max_length=256)
    task_id: str | None = Field(None, max_length=256)
    source: str | None = Field(None, max_length=1024)

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            check_meta_keys(data)
        return data

    @model_validator(mode="after")
    def _size(self) -> MemoryMeta:
        # After the fields, so 10,000 tags are named as tags, not as a meta too large.
        try:
            size = len(json.dumps(self.model_dump(mode="json"), default=str))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"meta must be JSON: {exc}") from exc
        if size > limits.MAX_META_BYTES:
            raise ValueError(f"meta is {size} bytes of JSON; the limit is {limits.MAX_META_BYTES}")
        return self

    def plain(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def union_tags(first: list[str], then: list[str] | None) -> list[str]:
    """One rule for tags given twice (top-level ``tags`` beside ``meta.tags``): the memory gets
    both, ``meta.tags`` first, no tag twice, at most ``MAX_TAGS`` together."""
    merged = list(dict.fromkeys([*first, *(then or [])]))
    if len(merged) > limits.MAX_TAGS:
        raise ValueError(
            f"tags and meta.tags hold {len(merged)} different tags together; the limit is {limits.MAX_TAGS}"
        )
    return merged


TopTags = Annotated[
    list[Tag] | None,
    Field(
        max_length=limits.MAX_TAGS,
        description=("Tags (the same as meta.tags; given both, the memory gets both, meta.tags first, no tag twice)."),
    ),
]


def _into_meta(tags: list[str] | None, info: ValidationInfo) -> list[str] | None:
    meta = info.data.get("meta")  # declared before tags: absent only when meta itself was refused
    if tags is None or meta is None:
        return tags
    meta.tags = union_tags(meta.tags, tags)
    return meta.tags


class _Request(BaseModel):
    # strict: JSON types as the schema says ("yes" is not a boolean, "5" not an integer).
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


# Governance fields (capsule.core.retention says what each class means).
RETENTION_DESCRIPTION = (
    "Retention class: irreplaceable (never evicted; forget needs force), permanent (never evicted), replaceable "
    "(evicted oldest first by the rolling limit), ephemeral (also expires after its ttl or at expires_at), "
    "auto (default: pinned means irreplaceable, else replaceable; a ttl or expires_at alone means ephemeral)."
)
Ttl = Annotated[
    int,
    Field(
        ge=1,
        le=limits.MAX_TTL_SECONDS,
        description=("Seconds until an ephemeral memory expires (1 to 10 years); the retention job then purges it."),
    ),
    BeforeValidator(json_int),
]
MemoryRef = Annotated[str, Field(min_length=1, max_length=128, description="A memory's id.")]


Visibility = Literal["private", "shared", "public"]
VISIBILITY_DESCRIPTION = (
    "Who in the tenant may read it: private (default; callers that see private memories: the tenant's own "
    "token, unscoped keys), shared (also keys scoped to see shared ones), public (also keys that see only "
    "public ones). A memory with flagged personal data cannot be public."
)
Subject = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        pattern=NO_CONTROL,
        description=("The person or end-user the memory is about (keys scoped to subjects reach only theirs)."),
    ),
]


class _Governed(_Request):
    # One expiry at most, and only for the expiring class (capsule.core.retention_policy states the rule
    # it checks). Not stated, as relative to now: expires_at must be ahead of it (at most 10 years).
    model_config = ConfigDict(json_schema_extra={"allOf": [EXPIRY_SCHEMA]})

    visibility: Visibility | None = Field(None, description=VISIBILITY_DESCRIPTION)
    subject: Subject | None = None
    retention: RetentionClass | None = Field(None, description=RETENTION_DESCRIPTION)
    ttl: Ttl | None = None
    expires_at: AwareDatetime | None = Field(
        None,
        description=(
            "When an ephemeral memory expires; instead of ttl, and only with retention ephemeral or none. Checked "
            "against the server's clock, so not in this schema: at least 1 second and at most 10 years ahead of now."
        ),
    )


class StoreRequest(_Governed):
    """Store one memory."""

    project: ProjectName
    content: Content
    path: PathText | None = None
    pinned: bool = False
    explanation: str | None = Field(
        None, max_length=limits.MAX_EXPLANATION_CHARS, description="Why this is worth remembering."
    )
    meta: MemoryMeta = Field(default_factory=MemoryMeta)
    tags: TopTags = None
    occurred_at: AwareDatetime | None = Field(None, description="When it happened, for imported history.")
    supersedes: MemoryRef | None = Field(
        None,
        description=(
            "The id of an older memory this one replaces (the fact changed): it is kept, but search returns "
            "this one unless include_superseded. Checked against the stored memories, so not in this schema: "
            "it names an active (not forgotten) memory of the caller's."
        ),
    )

    _tags = field_validator("tags")(_into_meta)


class IngestRequest(_Governed):
    """Chunk a text (a file, a transcript) and store every chunk, all or none."""

    project: ProjectName
    text: IngestText
    path: PathText | None = None
    pinned: bool = False
    meta: MemoryMeta = Field(default_factory=MemoryMeta)
    tags: TopTags = None
    occurred_at: AwareDatetime | None = None

    _tags = field_validator("tags")(_into_meta)


class SearchFilters(_Request):
    component: str | None = Field(None, max_length=128)
    category: str | None = Field(None, max_length=128)
    tags: list[Tag] = Field(
        default_factory=list, max_length=limits.MAX_TAGS, description="Every tag listed must be present."
    )
    path_prefix: PathText | None = None
    since: AwareDatetime | None = Field(
        None, description="Happened (occurred_at; stored time where there is none) at or after."
    )
    until: AwareDatetime | None = Field(
        None, description="Happened before (an until at or before since matches nothing)."
    )
    retention: EffectiveClass | None = Field(None, description="Only memories of this (effective) retention class.")
    visibility: Visibility | None = Field(None, description="Only memories of this visibility.")
    subject: Subject | None = Field(None, description="Only memories about this subject.")


class Weights(_Request):
    """Per-request ranking weights; each within bounds."""

    vector: float | None = Field(None, ge=0, le=1)
    bm25: float | None = Field(None, ge=0, le=1)
    time: float | None = Field(None, ge=0, le=1)
    feedback: float | None = Field(None, ge=0, le=1)


class SearchRequest(_Request):
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["project"], "properties": {"project": {"type": "string"}}},
                {"required": ["global"], "properties": {"global": {"const": True}}},
            ]
        }
    )

    query: str = Field(min_length=1, max_length=limits.MAX_QUERY_CHARS)
    project: ProjectName | None = None
    global_: bool = Field(False, alias="global", description="Search every project of the caller.")
    k: JsonInt = Field(limits.DEFAULT_K, ge=1, le=limits.MAX_K)
    filters: SearchFilters = Field(default_factory=SearchFilters)
    weights: Weights | None = None
    mode: Literal["hybrid", "vector", "bm25"] = "hybrid"
    as_of: AwareDatetime | None = Field(
        None,
        description=(
            "The search's now (default: the current time): recency is counted back from it, and the times a "
            'query names ("last month", "a week ago", "in February") are read from it.'
        ),
    )
    min_relevance: float | None = Field(
        None,
        ge=0,
        le=1,
        description=(
            "A hit needs its meaning (cosine) or keyword score (BM25 over the best match) at least this, or to have "
            "happened when the query says; default 0.15 (docs/search.md, How a search ranks)."
        ),
    )
    include_superseded: bool = Field(
        False, description=("Also return, on each hit, the older memories it superseded (the chain, newest first).")
    )

    @model_validator(mode="after")
    def _scope(self) -> SearchRequest:
        if not self.global_ and self.project is None:
            raise ValueError("give a project, or set global to search every project")
        return self


class ListRequest(_Request):
    project: ProjectName
    pinned_only: bool = False
    retention: EffectiveClass | None = Field(None, description="Only memories of this (effective) retention class.")
    forgotten: bool = False  # the forgotten memories still restorable, instead of the active ones
    visibility: Visibility | None = Field(None, description="Only memories of this visibility.")
    subject: Subject | None = Field(None, description="Only memories about this subject.")
    cursor: str | None = Field(None, max_length=limits.MAX_CURSOR_CHARS, pattern=CURSOR_PATTERN)
    limit: JsonInt = Field(limits.DEFAULT_PAGE, ge=1, le=limits.MAX_PAGE)


class ForgetRequest(_Request):
    reason: str | None = Field(None, max_length=limits.MAX_EXPLANATION_CHARS)
    force: bool = Field(False, description="Needed to forget an irreplaceable memory.")


class FeedbackRequest(_Request):
    helpful: bool
    context: str | None = Field(None, max_length=limits.MAX_CONTEXT_CHARS)


GuardPolicy = Literal["flag", "redact", "refuse"]


# A project's settings: a request gives at least one (the validator and the schema read this).
PROJECT_SETTINGS = ("retention_limit", "ephemeral_ttl", "secrets_policy", "pii_policy", "encryption")


class ProjectSettingsRequest(_Request):
    """A project's settings; those not given keep their values (at least one must be given)."""

    model_config = ConfigDict(json_schema_extra=any_given(PROJECT_SETTINGS))

    # Not nullable: a setting not given is left out, and null is refused (the schema says so too).
    # The Field first (as Ttl): after a BeforeValidator, in a union member, its bounds are published as
    # "ge"/"le" keys instead of minimum/maximum.
    retention_limit: (
        Annotated[int, Field(ge=1, le=limits.MAX_RETENTION_LIMIT), BeforeValidator(json_int)] | Literal["unlimited"]
    ) = Field(
        None,  # type: ignore[arg-type]
        description=(
            "The most memories the project keeps (a store beyond it evicts the oldest unpinned one, naming it;"
            " lowering it evicts at once, naming them), or 'unlimited': no rolling limit."
        ),
    )
    ephemeral_ttl: Ttl = Field(
        None,  # type: ignore[assignment]
        description=(
            "Seconds an ephemeral memory of this project lives when stored without ttl or expires_at (1 to 10 years)."
        ),
    )
    secrets_policy: GuardPolicy = Field(
        None,  # type: ignore[arg-type]
        description=(
            "Secrets found in a stored text (keys, tokens, private keys, card numbers): flag, redact"
            " (the default: [REDACTED:<kind>] is stored and embedded), or refuse (422 naming the kinds)."
        ),
    )
    pii_policy: GuardPolicy = Field(
        None,  # type: ignore[arg-type]
        description=(
            "Personal data found in a stored text (e-mail addresses, phone numbers, IBANs): flag (the"
            " default: kinds and spans in meta._guard), redact, or refuse."
        ),
    )
    encryption: Literal["flagged", "all"] = Field(
        None,  # type: ignore[arg-type]
        description=(
            "Which memories are encrypted at rest (AES-GCM under the tenant's data key): 'flagged' (the"
            " default: those with secrets or personal data found) or 'all' (every memory stored or changed from now on)."
        ),
    )

    @model_validator(mode="after")
    def _something(self) -> ProjectSettingsRequest:
        if all(getattr(self, name) is None for name in PROJECT_SETTINGS):
            raise ValueError(f"give at least one of {', '.join(PROJECT_SETTINGS)}")
        return self


# ---- results -------------------------------------------------------------


class Chunk(BaseModel):
    index: int
    of: int


class Memory(BaseModel):
    id: str
    project: str
    content: str
    path: str | None = None
    chunk: Chunk | None = None
    pinned: bool = False
    explanation: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
    status: Literal["ready", "pending_embedding"] = "ready"
    helpful: int = 0
    unhelpful: int = 0
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    forgotten_at: datetime | None = None
    retention: RetentionClass = "auto"
    effective_retention: EffectiveClass = "replaceable"
    expires_at: datetime | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    sha256: str | None = Field(None, description="sha256 of the content: send it as If-Match to update safely.")
    visibility: Visibility = "private"
    subject: str | None = None


class Eviction(BaseModel):
    id: str
    reason: str


class StoreResult(BaseModel):
    memory: Memory
    deduplicated: bool = False
    evicted: list[Eviction] = Field(default_factory=list)
    explanation: str


class IngestResult(BaseModel):
    ids: list[str]
    chunks: int
    deduplicated: list[str] = Field(default_factory=list, description="Ids of chunks already stored.")
    evicted: list[Eviction] = Field(default_factory=list)
    explanation: str


class Components(BaseModel):
    vector: float
    bm25: float
    time: float
    feedback: float
    outcome: float
    boost: float = Field(
        0.0,
        description=(
            "Query aids that adapt to the memories: the author or date the query names and, for short turns of "
            "longer sessions, neighbouring turns, the session's best match, the answer after a question, "
            "length and when-priors."
        ),
    )


class SupersededMemory(BaseModel):
    id: str
    content: str
    superseded_by: str | None = None
    occurred_at: datetime
    created_at: datetime


class SearchHit(BaseModel):
    id: str
    project: str
    path: str | None = None
    chunk: Chunk | None = None
    content: str
    score: float
    components: Components
    pinned: bool = False
    meta: dict[str, Any] = Field(default_factory=dict)
    occurred_at: datetime
    created_at: datetime
    retention: EffectiveClass = "replaceable"
    visibility: Visibility = "private"
    subject: str | None = None
    supersedes: str | None = None
    superseded: list[SupersededMemory] = Field(
        default_factory=list, description=("With include_superseded: the memories this one superseded, newest first.")
    )


class SearchResult(BaseModel):
    results: list[SearchHit]
    explanation: str


class ListResult(BaseModel):
    memories: list[Memory]
    next_cursor: str | None = None
    explanation: str


class MemoryResult(BaseModel):
    memory: Memory
    explanation: str


class RestoreResult(MemoryResult):
    over_limit: bool = Field(
        description=(
            "The project now holds more than its rolling limit: nothing else was evicted; the next store evicts "
            "(naming them in its answer) the oldest unpinned memories beyond it, which may be this one."
        )
    )
    memories: int = Field(description="Memories the project holds now.")
    retention_limit: int | None


class ProjectInfo(BaseModel):
    project: str
    root_path: str | None = Field(
        None, description=("The checkout's folder, where the project is named by it (capsule.core.project_identity).")
    )
    label: str = Field(description="The folder's name (the basename of the root path; a bare name is its own).")
    memories: int
    pinned: int
    forgotten: int
    retention_limit: int | None = Field(description="The rolling limit; null: none (every memory is kept).")
    last_activity: datetime | None = None
    secrets_policy: str | None = Field(None, description="What a store does with secrets found (capsule.guard).")
    pii_policy: str | None = Field(None, description="What a store does with personal data found.")
    encryption: str | None = Field(
        None, description=("Which memories are encrypted at rest: flagged (the default) or all (capsule.crypto).")
    )


class ProjectsResult(BaseModel):
    projects: list[ProjectInfo]
    evicted: list[Eviction] = Field(
        default_factory=list, description=("Memories a lowered retention limit evicted, each with its reason.")
    )
    explanation: str


class ErrorBody(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    error: ErrorBody
