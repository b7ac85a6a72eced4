"""Capture: score conversation events, queue the candidates worth remembering, and let a
person (or a project threshold) approve or reject them. No language model: see
:mod:`capsule.capture.scoring`."""

from .scoring import Event, Scored, score_event
from .service import CaptureService

__all__ = ["CaptureService", "Event", "Scored", "score_event", "build_capture"]


def build_capture(service) -> CaptureService:
    """The capture service on a built :class:`~capsule.service.MemoryService`'s store."""
    from ..store.capture import candidate_store

    return CaptureService(service, candidate_store(service.store))
