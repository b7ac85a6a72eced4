"""The one settings object, read from the environment (``CAPSULE_*``) or built directly.

Tests build ``Settings(...)`` or call ``Settings.from_env({...})`` with their own mapping,
so nothing needs patching.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from .core import limits
from .core.errors import InvalidInput
from .core.fielderrors import from_validation_error
from .core.paths import default_data_dir
from .search.ranking import Weights

# The names of capsule.core.embedder_names.EMBEDDER_NAMES, as the type checker reads them.
EmbedderName = Literal["auto", "minilm", "mpnet", "hashing", "voyage", "openai"]

# setting name -> environment variable
ENVIRONMENT = {
    "data_dir": "CAPSULE_DATA_DIR",
    "store": "CAPSULE_STORE",
    "mongodb_uri": "CAPSULE_MONGODB_URI",
    "mongodb_db": "CAPSULE_MONGODB_DB",
    "mongodb_vector_search_min": "CAPSULE_MONGODB_VECTOR_SEARCH_MIN",
    "mongodb_vector_index": "CAPSULE_MONGODB_VECTOR_INDEX",
    "embedder": "CAPSULE_EMBEDDER",
    "model_dir": "CAPSULE_MODEL_DIR",
    "mpnet_precision": "CAPSULE_MPNET_PRECISION",
    "voyage_api_key": "VOYAGE_API_KEY",
    "openai_api_key": "OPENAI_API_KEY",
    # Where the providers' APIs are (a gateway, a stand-in on loopback), under the names their
    # SDKs read: OpenAI's, and Voyage's VOYAGE_API_BASE too (ALIASES).
    "voyage_base_url": "VOYAGE_BASE_URL",
    "openai_base_url": "OPENAI_BASE_URL",
    "retention_limit": "CAPSULE_RETENTION_LIMIT",
    "ephemeral_ttl": "CAPSULE_EPHEMERAL_TTL",
    "secrets_policy": "CAPSULE_SECRETS_POLICY",
    "pii_policy": "CAPSULE_PII_POLICY",
    "weight_vector": "CAPSULE_WEIGHT_VECTOR",
    "weight_bm25": "CAPSULE_WEIGHT_BM25",
    "weight_time": "CAPSULE_WEIGHT_TIME",
    "weight_feedback": "CAPSULE_WEIGHT_FEEDBACK",
    "half_life_days": "CAPSULE_HALF_LIFE_DAYS",
    "log_level": "CAPSULE_LOG_LEVEL",
    "search_exact": "CAPSULE_SEARCH_EXACT",
    "search_candidates": "CAPSULE_SEARCH_CANDIDATES",
    "index_memory_mb": "CAPSULE_INDEX_MEMORY_MB",
    "query_cache_entries": "CAPSULE_QUERY_CACHE_ENTRIES",
    "index_snapshot_min": "CAPSULE_INDEX_SNAPSHOT_MIN",
    "records_in_ram": "CAPSULE_RECORDS_IN_RAM",
    "session_context_words": "CAPSULE_SESSION_CONTEXT_WORDS",
    "kms_key_id": "CAPSULE_KMS_KEY_ID",
    "tenant_rate_limit": "CAPSULE_TENANT_RATE_LIMIT",
    "usage_flush_seconds": "CAPSULE_USAGE_FLUSH_SECONDS",
    "tenant_metrics": "CAPSULE_TENANT_METRICS",
}

# setting name -> other environment variables that set it too (the voyageai SDK's 0.x releases
# read VOYAGE_API_BASE); when several are set they must agree.
ALIASES = {"voyage_base_url": ("VOYAGE_API_BASE",)}


# Set by Lambda in every function: its memory size in MB.
LAMBDA_MEMORY = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"


def index_budget_mb(function_mb: int) -> int:
    """The warm indexes' share of a function's memory: a quarter. The rest holds the runtime
    and the layer's imports (~150 MB), one search's transient arrays, the reply being decoded
    and a cold project's load before the least recently used index is dropped."""
    return max(0, function_mb // 4)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    data_dir: Path = Field(default_factory=default_data_dir)
    store: Literal["sqlite", "mongo"] = "sqlite"
    mongodb_uri: SecretStr | None = None
    mongodb_db: str = "capsule"
    # Projects (or global searches) with at least this many memories take their candidates from
    # the cluster's indexes (Atlas Vector Search, $text) and are never read whole; None scores
    # every memory. The hosted stack sets it (infra/app.py, context vector_search_min).
    mongodb_vector_search_min: int | None = Field(None, ge=1)
    mongodb_vector_index: str = "capsule_vectors"
    embedder: EmbedderName = "auto"
    model_dir: Path | None = None
    # The mpnet embedder's graph (capsule.embedders.mpnet.PRECISIONS): int8 is ~1.5x faster, its
    # vectors within ~0.99 cosine of fp32's.
    mpnet_precision: Literal["fp32", "int8"] = "fp32"
    voyage_api_key: SecretStr | None = None
    openai_api_key: SecretStr | None = None
    # None: the provider's own API (capsule.embedders.remote)
    voyage_base_url: str | None = None
    openai_base_url: str | None = None
    retention_limit: int = Field(limits.DEFAULT_RETENTION_LIMIT, ge=1, le=limits.MAX_RETENTION_LIMIT)
    # Seconds an ephemeral memory given no ttl or expires_at lives (capsule.governance).
    ephemeral_ttl: int = Field(limits.DEFAULT_EPHEMERAL_TTL_SECONDS, ge=1, le=limits.MAX_TTL_SECONDS)
    # What a store does with secrets and personal data found in a text (capsule.guard): the
    # default of every project that has not set its own.
    secrets_policy: Literal["flag", "redact", "refuse"] = "redact"
    pii_policy: Literal["flag", "redact", "refuse"] = "flag"
    weight_vector: float = Field(0.60, ge=0, le=1)
    weight_bm25: float = Field(0.30, ge=0, le=1)
    weight_time: float = Field(0.10, ge=0, le=1)
    weight_feedback: float = Field(0.15, ge=0, le=1)
    half_life_days: float = Field(30.0, gt=0)
    log_level: str = "INFO"
    # Search: exact float32 first stage instead of binary codes; rows re-scored per stage;
    # RAM for warm project indexes (least recently used dropped); 0 entries turns the cache off.
    search_exact: bool = False
    search_candidates: int = Field(500, ge=10, le=100_000)
    index_memory_mb: int = Field(1024, ge=0)  # on Lambda: index_budget_mb(function memory) unless set
    query_cache_entries: int = Field(1024, ge=0)
    # Projects of at least this many memories keep a snapshot of their index under
    # data_dir/index, so a fresh process loads it instead of rebuilding (0: never). Small:
    # a global search over 100 projects of 10k took 41 s to build from SQLite, 1.4 s to load.
    index_snapshot_min: int = Field(1_000, ge=0)
    # Memories whose whole records the warm indexes hold in RAM, over every project; beyond,
    # an index holds ids and reads its hits' records from the store (one read per search).
    records_in_ram: int = Field(200_000, ge=0)
    # A memory of a session this short (in words) is embedded with the session's memory
    # before it, when that one is this short too (capsule.service.context); 0 embeds every memory alone.
    session_context_words: int = Field(60, ge=0, le=10_000)
    # Hosted: the KMS key (id, ARN or alias) that wraps tenants' data keys (capsule.crypto);
    # unset, the embedded store wraps them with a local key file in data_dir.
    kms_key_id: str | None = Field(None, min_length=1, max_length=2048)
    # Requests a tenant may make a minute over the HTTP API (functions.metering; 0: no limit).
    # Set, every request is counted by one write that answers the minute's count; unset, counts
    # are buffered per process and written at most every usage_flush_seconds (capsule.service.usage_meter).
    tenant_rate_limit: int = Field(0, ge=0, le=1_000_000)
    usage_flush_seconds: int = Field(60, ge=1, le=3600)
    # An EMF metric per tenant and costly operation (a CloudWatch custom metric each: docs/aws.md).
    tenant_metrics: bool = False

    @field_validator("voyage_base_url", "openai_base_url")
    @classmethod
    def _http_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        variable = ENVIRONMENT[info.field_name]  # type: ignore[index]  # a field validator: field_name is set
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            # the value itself is not shown: a URL may carry credentials
            raise PydanticCustomError(
                "http_url", "{variable} must be an http:// or https:// URL with a host", {"variable": variable}
            )
        return value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {name: environ[var] for name, var in ENVIRONMENT.items() if environ.get(var, "") != ""}
        values.update(_aliased(environ))
        function_mb = environ.get(LAMBDA_MEMORY, "")
        if "index_memory_mb" not in values and function_mb.isdigit():
            values["index_memory_mb"] = index_budget_mb(int(function_mb))
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            raise from_validation_error(exc) from exc

    @property
    def database_path(self) -> Path:
        return self.data_dir / "capsule.db"

    @property
    def weights(self) -> Weights:
        return Weights(
            vector=self.weight_vector,
            bm25=self.weight_bm25,
            time=self.weight_time,
            feedback=self.weight_feedback,
            half_life_days=self.half_life_days,
        )


def _aliased(environ: Mapping[str, str]) -> dict[str, str]:
    """The settings given by an alias (:data:`ALIASES`); an alias that disagrees is refused."""
    values: dict[str, str] = {}
    for name, aliases in ALIASES.items():
        given = {var: environ[var] for var in (ENVIRONMENT[name], *aliases) if environ.get(var, "") != ""}
        if len(set(given.values())) > 1:
            raise InvalidInput(f"{' and '.join(given)} name different URLs: set one of them", field=name)
        if given:
            values[name] = next(iter(given.values()))
    return values
