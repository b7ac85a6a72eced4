"""The capture service for the capture handlers, built once per container on the memory
service of :func:`functions.app.service` (a test injecting a service gets capture on it)."""

from __future__ import annotations

import threading

from capsule.capture import CaptureService, build_capture
from capsule.service.memory_service import MemoryService

from . import app

_lock = threading.Lock()
_built: tuple[MemoryService, CaptureService] | None = None


def capture() -> CaptureService:
    global _built
    service = app.service()
    with _lock:
        if _built is None or _built[0] is not service:
            _built = (service, build_capture(service))
        return _built[1]
