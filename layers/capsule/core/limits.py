"""Every explicit limit of the service, in one place (the models and the edge read them)."""

MAX_CONTENT_BYTES = 64 * 1024  # one stored memory
MAX_INGEST_BYTES = 1024 * 1024  # one ingest text (it is chunked)
MAX_BODY_BYTES = 1024 * 1024 + 64 * 1024  # one HTTP body: an ingest text plus its JSON envelope
MAX_PROJECT_CHARS = 512
MAX_PATH_CHARS = 1024
MAX_QUERY_CHARS = 8192
MAX_EXPLANATION_CHARS = 4096
MAX_CONTEXT_CHARS = 4096
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_META_BYTES = 16 * 1024
MAX_META_DEPTH = 8
DEFAULT_K = 8
MAX_K = 20
DEFAULT_PAGE = 20
MAX_PAGE = 100
MAX_CURSOR_CHARS = 1044  # a position: 20 characters of time, the id (at most 512 bytes) in hex
MAX_COUNT = 10**9  # success/failure and helpful counters saturate here
DEFAULT_RETENTION_LIMIT = 100
MAX_RETENTION_LIMIT = 1_000_000
DEDUPE_HOURS = 48
FORGET_RECOVERABLE_DAYS = 30
EMBEDDING_CACHE_DAYS = 60
QUERY_CACHE_SECONDS = 300
# Governance (capsule.governance)
MAX_TTL_SECONDS = 10 * 366 * 86_400  # an ephemeral memory's time to live: 1 s to 10 years
DEFAULT_EPHEMERAL_TTL_SECONDS = 7 * 86_400  # an ephemeral memory given no ttl or expires_at
MAX_VERSIONS_LISTED = 100  # a history page
MAX_SHA256_CHARS = 64
# Integers the stores hold (SQLite's INTEGER, BSON's int64) are below this, and at least its negative.
# A schema states it as exclusiveMaximum: the document's numbers are floats, which hold 2**63 exactly
# but not 2**63 - 1 (a maximum of 2**63 - 1 reads as 2**63, and admitted what the check refused).
INT_END = 2**63
