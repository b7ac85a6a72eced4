"""The learning service for the solution and pattern handlers, built once per container.

It shares the memory service of :func:`functions.app.service` (its store, embedder and
clock), so a test that injects a service with ``app.set_service`` gets a learning service
on the very same store.
"""

from __future__ import annotations

import threading

from capsule.learning import LearningService
from capsule.runtime.learning import build_learning
from capsule.service.memory_service import MemoryService

from . import app

_lock = threading.Lock()
_built: tuple[MemoryService, LearningService] | None = None


def learning() -> LearningService:
    global _built
    service = app.service()
    with _lock:
        if _built is None or _built[0] is not service:
            _built = (service, build_learning(service))
        return _built[1]
