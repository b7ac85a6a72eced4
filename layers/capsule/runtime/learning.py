"""Wiring the learning side next to an already built :class:`~capsule.service.memory_service.MemoryService`."""

from __future__ import annotations

from ..guard.policy import Policies
from ..learning.service import LearningService
from ..service.memory_service import MemoryService
from ..store.sides import open_learning_store


def build_learning(service: MemoryService) -> LearningService:
    """A LearningService sharing the memory service's store, embedder and clock."""
    store = open_learning_store(service.store, service.settings)
    guard = Policies(secrets=service.settings.secrets_policy, pii=service.settings.pii_policy)
    return LearningService(store, service.store, service.embedder, clock=service.clock, guard=guard)


def build_jobs(service: MemoryService, learning: LearningService | None = None):
    """The scheduled jobs over the service's stores and embedder."""
    from ..jobs.scheduled import Jobs

    learning = learning or build_learning(service)
    return Jobs(service.store, learning, service.embedder, clock=service.clock, settings=service.settings)
