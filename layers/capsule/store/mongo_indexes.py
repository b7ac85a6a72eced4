"""The MongoDB schema: every collection's indexes, their TTLs and the schema version.

Every query the store issues has its index here (store/QUERIES.md lists them side by side;
the contract suite's mongomock-strict backend checks it). ``MongoStore.migrate`` creates them
once per ``SCHEMA_VERSION``.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 9  # 7: scopes; 8: data keys (capsule.store.mongo_keys); 9: the audit log by page; bump when INDEXES change: the next cold start creates the new ones
DAY = 86_400
# A day past limits.FORGET_RECOVERABLE_DAYS: the hourly retention job purges (and audits) first;
# the server's TTL is only the backstop when the job has not run.
FORGOTTEN_TTL_S = 31 * DAY
EMBEDDING_CACHE_TTL_S = 60 * DAY  # limits.EMBEDDING_CACHE_DAYS
QUERY_CACHE_TTL_S = 300  # limits.QUERY_CACHE_SECONDS
PENDING_TTL_S = 3_600  # an unpublished write older than this belonged to a dead writer

# (keys, options) per collection; every query the store makes has its index.
INDEXES: dict[str, list[tuple[list[tuple[str, Any]], dict[str, Any]]]] = {
    "memories": [
        ([("tenant", 1), ("id", 1)], {"name": "memory_id", "unique": True}),
        ([("tenant", 1), ("project", 1), ("active", 1), ("created_at", -1), ("id", -1)], {"name": "recent"}),
        (
            [("tenant", 1), ("project", 1), ("active", 1), ("pinned", 1), ("created_at", -1), ("id", -1)],
            {"name": "recent_pinned"},
        ),
        ([("tenant", 1), ("project", 1), ("active", 1), ("seq", 1)], {"name": "reload"}),
        (
            [("tenant", 1), ("project", 1), ("active", 1), ("pinned", 1), ("created_at", 1), ("seq", 1)],
            {"name": "evictable"},
        ),
        ([("tenant", 1), ("project", 1), ("sha256", 1), ("created_at", 1)], {"name": "dedupe"}),
        ([("tenant", 1), ("project", 1), ("path", 1)], {"name": "path"}),
        ([("tenant", 1), ("active", 1), ("project", 1)], {"name": "tenant_active"}),
        (
            [("status", 1), ("created_at", 1), ("seq", 1)],
            {"name": "pending_embedding", "partialFilterExpression": {"status": "pending_embedding"}},
        ),
        ([("model", 1), ("created_at", 1), ("seq", 1)], {"name": "model", "partialFilterExpression": {"active": True}}),
        ([("deleted_at", 1)], {"name": "forgotten", "partialFilterExpression": {"deleted_at": {"$type": "double"}}}),
        ([("pending", 1)], {"name": "pending", "sparse": True}),
        ([("tenant", 1), ("project", 1), ("version", 1)], {"name": "changes"}),
        (
            [("tenant", 1), ("project", 1), ("meta.session", 1), ("occurred_at", -1), ("seq", -1)],
            {"name": "session_turns", "partialFilterExpression": {"active": True}},
        ),
        ([("deleted_on", 1)], {"name": "forgotten_ttl", "expireAfterSeconds": FORGOTTEN_TTL_S}),
        ([("pending_on", 1)], {"name": "pending_ttl", "expireAfterSeconds": PENDING_TTL_S}),
        # The transfer's keyset export pages (tenant (, project), _id > last, sorted by _id): read
        # in _id order within the tenant, never a blocking sort of all its memories per page.
        ([("tenant", 1), ("_id", 1)], {"name": "tenant_export"}),
        # Governance: list by retention class; the retention job's expiry sweep.
        (
            [("tenant", 1), ("project", 1), ("active", 1), ("retention", 1), ("created_at", -1), ("id", -1)],
            {"name": "recent_class"},
        ),
        (
            [
                ("tenant", 1),
                ("project", 1),
                ("active", 1),
                ("retention", 1),
                ("pinned", 1),
                ("created_at", -1),
                ("id", -1),
            ],
            {"name": "recent_class_pinned"},
        ),
        ([("expires_at", 1)], {"name": "expiry", "partialFilterExpression": {"expires_at": {"$type": "double"}}}),
        # Visibility and subject (capsule.store.mongo_visibility): list by either or both.
        (
            [("tenant", 1), ("project", 1), ("active", 1), ("visibility", 1), ("created_at", -1), ("id", -1)],
            {"name": "recent_visibility"},
        ),
        (
            [("tenant", 1), ("project", 1), ("active", 1), ("subject", 1), ("created_at", -1), ("id", -1)],
            {"name": "recent_subject"},
        ),
        (
            [
                ("tenant", 1),
                ("project", 1),
                ("active", 1),
                ("visibility", 1),
                ("subject", 1),
                ("created_at", -1),
                ("id", -1),
            ],
            {"name": "recent_visibility_subject"},
        ),
    ],
    # Earlier versions of updated memories (capsule.store.mongo_governance).
    "memory_versions": [
        ([("tenant", 1), ("memory_id", 1), ("number", 1)], {"name": "version_number", "unique": True}),
        ([("tenant", 1), ("_id", 1)], {"name": "versions_export"}),
        ([("tenant", 1), ("project", 1), ("_id", 1)], {"name": "versions_project"}),
    ],
    "projects": [([("tenant", 1), ("name", 1)], {"name": "project", "unique": True})],
    # The tenant's IAM principal ARN patterns -> scopes (capsule.store.scopes).
    "principal_scopes": [([("tenant", 1)], {"name": "principal_scopes_tenant", "unique": True})],
    "feedback": [([("tenant", 1), ("memory_id", 1)], {"name": "feedback_memory"})],
    "audit": [
        ([("tenant", 1), ("memory_id", 1), ("_id", -1)], {"name": "audit_memory"}),
        ([("tenant", 1), ("_id", -1)], {"name": "audit_recent"}),
        ([("tenant", 1), ("project", 1), ("_id", 1)], {"name": "audit_project"}),
        # Schema 9: the audit log by page (GET /v1/audit, mongo_projects.audit_page), newest first by
        # (at, _id) within the tenant, a project (and an action), a memory or an action.
        ([("tenant", 1), ("at", -1), ("_id", -1)], {"name": "audit_at"}),
        ([("tenant", 1), ("project", 1), ("at", -1), ("_id", -1)], {"name": "audit_project_at"}),
        ([("tenant", 1), ("project", 1), ("action", 1), ("at", -1), ("_id", -1)], {"name": "audit_project_action_at"}),
        ([("tenant", 1), ("memory_id", 1), ("at", -1), ("_id", -1)], {"name": "audit_memory_at"}),
        ([("tenant", 1), ("action", 1), ("at", -1), ("_id", -1)], {"name": "audit_action_at"}),
    ],
    # The transfer's keyset export pages (tenant, _id > last); the learning store's own
    # indexes on this collection are in mongo_learning. (Applications' pages read the learning
    # store's unique (tenant, id), mongo_learning_ids, which dropped applications_export.)
    "pattern_evidence": [([("tenant", 1), ("_id", 1)], {"name": "evidence_export"})],
    "embedding_cache": [
        ([("created_at", 1)], {"name": "cache_age"}),
        ([("model", 1), ("sha256", 1)], {"name": "cache_key", "unique": True}),
        ([("created_on", 1)], {"name": "cache_ttl", "expireAfterSeconds": EMBEDDING_CACHE_TTL_S}),
    ],
    "query_cache": [([("created_on", 1)], {"name": "query_ttl", "expireAfterSeconds": QUERY_CACHE_TTL_S})],
    # Schema 8: tenants' wrapped data keys by version (capsule.store.mongo_keys).
    "data_keys": [([("tenant", 1), ("version", 1)], {"name": "data_key_version", "unique": True})],
    "project_encryption": [([("tenant", 1), ("mode", 1)], {"name": "encryption_mode"})],
}
