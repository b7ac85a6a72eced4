"""Capture: score conversation events, queue the candidates worth remembering, approve or reject them.
May import: capsule.service and everything below it.

Capture: score conversation events, queue the candidates worth remembering, and let a
person (or a project threshold) approve or reject them. No language model: see
:mod:`capsule.capture.scoring`.

The names below load on first use, so a hook that only reads :mod:`.models`' limits, or the
scorer, does not import the service and the store (numpy, pydantic) at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scoring import Event, Scored, score_event
    from .service import CaptureService

__all__ = ["CaptureService", "Event", "Scored", "build_capture", "score_event"]


def __getattr__(name: str) -> Any:
    if name in ("Event", "Scored", "score_event"):
        from . import scoring

        return getattr(scoring, name)
    if name == "CaptureService":
        from .service import CaptureService

        return CaptureService
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_capture(service: Any) -> CaptureService:
    """The capture service on a built :class:`~capsule.service.memory_service.MemoryService`'s store."""
    from ..store.sides import candidate_store
    from .service import CaptureService

    return CaptureService(service, candidate_store(service.store))
