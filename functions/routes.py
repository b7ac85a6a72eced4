"""The one route table. The CDK app (infra/) and the local gateway (``capsule serve``)
both read it, so a route cannot exist in one and not the other.

Each route names the Lambda handler (``module:function``) that serves it, and the
hints the CDK app uses for that function.
"""

from __future__ import annotations

from dataclasses import dataclass

# API Gateway answers 503 after its integration timeout (30 s at most; the stack sets 29, the
# most CDK accepts) whatever the function does, and a cold start (the init phase, ~2.5 s for
# the search path at 512 MB) is not part of the function's timeout: a route's timeout leaves
# that margin, so the function answers (or its deadline gives a 503, capsule.core.deadline) before
# the gateway gives up on a request that may still commit.
GATEWAY_TIMEOUT_S = 29
COLD_START_MARGIN_S = 4
MAX_TIMEOUT_S = GATEWAY_TIMEOUT_S - COLD_START_MARGIN_S


@dataclass(frozen=True, slots=True)
class Route:
    name: str  # the operation; also the Lambda function's logical name
    method: str
    path: str  # API Gateway route path, with {param} placeholders
    handler: str  # "module:function" of the Lambda handler
    timeout_s: int = 10
    memory_mb: int = 512
    auth: bool = True  # IAM (hosted) or token/SigV4 (local); False only for public documents


def _h(name: str) -> str:
    return f"functions.handlers.{name}:handler"


ROUTES: tuple[Route, ...] = (
    Route("health", "GET", "/v1/health", _h("health"), timeout_s=5, memory_mb=256),
    Route("store", "POST", "/v1/memories", _h("store")),
    Route("list", "GET", "/v1/memories", _h("list")),
    Route("ingest", "POST", "/v1/memories/ingest", _h("ingest"), timeout_s=MAX_TIMEOUT_S, memory_mb=1024),
    Route("search", "POST", "/v1/memories/search", _h("search"), timeout_s=15, memory_mb=1024),
    Route("get", "GET", "/v1/memories/{id}", _h("get")),
    Route("forget", "DELETE", "/v1/memories/{id}", _h("forget")),
    Route("pin", "POST", "/v1/memories/{id}/pin", _h("pin")),
    Route("unpin", "POST", "/v1/memories/{id}/unpin", _h("unpin")),
    Route("restore", "POST", "/v1/memories/{id}/restore", _h("restore")),
    Route("feedback", "POST", "/v1/memories/{id}/feedback", _h("feedback")),
    # governance: update with history (capsule.governance)
    Route("update", "PATCH", "/v1/memories/{id}", _h("update"), timeout_s=15),
    Route("history", "GET", "/v1/memories/{id}/history", _h("history")),
    Route("revert", "POST", "/v1/memories/{id}/revert", _h("revert"), timeout_s=15),
    Route("audit", "GET", "/v1/audit", _h("audit")),
    # per-tenant usage counters (functions.metering, capsule.service.usage)
    Route("usage", "GET", "/v1/usage", _h("usage")),
    Route("projects", "GET", "/v1/projects", _h("projects")),
    # capture: memories proposed from conversations (capsule.capture)
    Route("capture", "POST", "/v1/memories/capture", _h("capture"), timeout_s=MAX_TIMEOUT_S),
    Route("capture_settings", "PUT", "/v1/memories/capture/settings", _h("capture_settings")),
    Route("candidates", "GET", "/v1/memories/candidates", _h("candidates")),
    Route("candidate_approve", "POST", "/v1/memories/candidates/{id}/approve", _h("candidate_approve")),
    Route("candidate_reject", "POST", "/v1/memories/candidates/{id}/reject", _h("candidate_reject")),
    Route("project_settings", "PUT", "/v1/projects/settings", _h("project_settings")),
    # encryption at rest (capsule.crypto): the caller's own data key
    Route("rotate_data_key", "POST", "/v1/keys/rotate", _h("rotate_data_key")),
    Route("openapi", "GET", "/openapi.json", _h("openapi"), timeout_s=5, memory_mb=256, auth=False),
    # solutions (fixpacks) and error patterns: capsule.learning
    Route("solution_create", "POST", "/v1/solutions", _h("solution_create")),
    Route("solution_list", "GET", "/v1/solutions", _h("solution_list")),
    Route("solution_import", "POST", "/v1/solutions/import", _h("solution_import")),
    Route("solution_search", "POST", "/v1/solutions/search", _h("solution_search"), timeout_s=15, memory_mb=1024),
    Route("solution_get", "GET", "/v1/solutions/{id}", _h("solution_get")),
    Route("solution_update", "PUT", "/v1/solutions/{id}", _h("solution_update")),
    Route("solution_delete", "DELETE", "/v1/solutions/{id}", _h("solution_delete")),
    Route("solution_apply", "POST", "/v1/solutions/{id}/apply", _h("solution_apply")),
    Route("pattern_detect", "POST", "/v1/patterns/detect", _h("pattern_detect"), timeout_s=15, memory_mb=1024),
    Route("pattern_solutions", "POST", "/v1/patterns/solutions", _h("pattern_solutions")),
    Route("pattern_link", "POST", "/v1/patterns/link", _h("pattern_link")),
    Route("golden_paths", "GET", "/v1/patterns/golden-paths", _h("golden_paths")),
    Route(
        "detect_patterns", "POST", "/v1/patterns/mine", _h("detect_patterns"), timeout_s=MAX_TIMEOUT_S, memory_mb=1024
    ),
    # data in and out: capsule.transfer
    Route("export", "GET", "/v1/export", _h("export"), timeout_s=MAX_TIMEOUT_S, memory_mb=1024),
    Route("import_data", "POST", "/v1/import", _h("import_data"), timeout_s=MAX_TIMEOUT_S, memory_mb=1024),
    # asynchronous jobs: ingest, import and mining past the synchronous budget (functions.async_jobs)
    Route("job_get", "GET", "/v1/jobs/{id}", _h("job_get"), timeout_s=5, memory_mb=256),
    # one memory across peers: capsule.sync
    Route("sync_changes", "GET", "/v1/sync/changes", _h("sync_changes"), timeout_s=MAX_TIMEOUT_S, memory_mb=1024),
    Route("sync_apply", "POST", "/v1/sync/apply", _h("sync_apply"), timeout_s=MAX_TIMEOUT_S, memory_mb=1024),
    # scoped access: the caller's scope, the tenant's principal scopes (functions.scopes)
    Route("whoami", "GET", "/v1/scopes/me", _h("whoami"), timeout_s=5, memory_mb=256),
    Route("principal_scopes", "GET", "/v1/scopes/principals", _h("principal_scopes")),
    Route("principal_scopes_set", "PUT", "/v1/scopes/principals", _h("principal_scopes_set")),
)


def by_name(name: str) -> Route:
    for route in ROUTES:
        if route.name == name:
            return route
    raise KeyError(name)
