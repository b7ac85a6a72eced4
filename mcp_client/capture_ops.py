"""Capture on whichever backend the MCP tools, hooks and CLI use: the library on the embedded
store, or the HTTP API through the client's public ``request`` (one call per operation)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import quote

from capsule.capture import build_capture
from capsule.capture import models as cm

from .backends import Backend, EmbeddedBackend, RemoteBackend, RetryingOpen


class CaptureOps(Protocol):
    def capture(self, request: Mapping[str, Any]) -> cm.CaptureResult: ...
    def candidates(self, *, project: str | None, status: str, cursor: str | None, limit: int) -> cm.CandidateList: ...
    def approve(self, candidate_id: str, request: Mapping[str, Any]) -> cm.DecisionResult: ...
    def reject(self, candidate_id: str, request: Mapping[str, Any]) -> cm.DecisionResult: ...
    def set_threshold(self, request: Mapping[str, Any]) -> cm.ThresholdResult: ...


class EmbeddedCapture:
    def __init__(self, backend: EmbeddedBackend) -> None:
        self.tenant = backend.tenant
        self.service = build_capture(backend.service)

    def capture(self, request: Mapping[str, Any]) -> cm.CaptureResult:
        return self.service.capture(self.tenant, dict(request))

    def candidates(self, *, project: str | None, status: str, cursor: str | None, limit: int) -> cm.CandidateList:
        return self.service.candidates(self.tenant, project=project, status=status, cursor=cursor, limit=limit)

    def approve(self, candidate_id: str, request: Mapping[str, Any]) -> cm.DecisionResult:
        return self.service.approve(self.tenant, candidate_id, dict(request))

    def reject(self, candidate_id: str, request: Mapping[str, Any]) -> cm.DecisionResult:
        return self.service.reject(self.tenant, candidate_id, dict(request))

    def set_threshold(self, request: Mapping[str, Any]) -> cm.ThresholdResult:
        return self.service.set_threshold(self.tenant, dict(request))


class RemoteCapture:
    def __init__(self, backend: RemoteBackend) -> None:
        self.client = backend.client

    def _call(self, model: type, method: str, path: str, **kwargs: Any) -> Any:
        return model.model_validate(self.client.request(method, path, **kwargs))

    def capture(self, request: Mapping[str, Any]) -> cm.CaptureResult:
        # Not retried blindly: a capture that timed out may have queued its candidates (a second
        # try then proposes nothing twice anyway: the queue keys candidates by their text).
        return self._call(cm.CaptureResult, "POST", "/v1/memories/capture", body=dict(request))

    def candidates(self, *, project: str | None, status: str, cursor: str | None, limit: int) -> cm.CandidateList:
        query = {"project": project, "status": status, "cursor": cursor, "limit": limit}
        return self._call(cm.CandidateList, "GET", "/v1/memories/candidates", query=query)

    def approve(self, candidate_id: str, request: Mapping[str, Any]) -> cm.DecisionResult:
        return self._call(
            cm.DecisionResult,
            "POST",
            f"/v1/memories/candidates/{quote(candidate_id, safe='')}/approve",
            body=dict(request),
            keyed=True,
        )

    def reject(self, candidate_id: str, request: Mapping[str, Any]) -> cm.DecisionResult:
        return self._call(
            cm.DecisionResult,
            "POST",
            f"/v1/memories/candidates/{quote(candidate_id, safe='')}/reject",
            body=dict(request),
            keyed=True,
        )

    def set_threshold(self, request: Mapping[str, Any]) -> cm.ThresholdResult:
        return self._call(cm.ThresholdResult, "PUT", "/v1/memories/capture/settings", body=dict(request))


def capture_ops(backend: Backend) -> CaptureOps:
    """Capture on ``backend`` (built once per backend and kept on it)."""
    if isinstance(backend, RetryingOpen):
        backend = backend._opened()
    ops = getattr(backend, "_capture_ops", None)
    if ops is None:
        ops = EmbeddedCapture(backend) if isinstance(backend, EmbeddedBackend) else RemoteCapture(backend)  # type: ignore[arg-type]
        backend._capture_ops = ops  # type: ignore[attr-defined]
    return ops
