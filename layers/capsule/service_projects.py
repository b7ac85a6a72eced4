"""A tenant's projects as :class:`~capsule.service.MemoryService` reports and sets them: what
each holds, and its settings (the retention limit, the ephemeral ttl, the secrets and
personal-data policies, encryption at rest), each the deployment's where the project has
not set its own."""

from __future__ import annotations

from typing import Any

from . import models
from .clock import Clock
from .config import Settings
from .guard.policy import Policies
from .service_edge import validate
from .store.base import MemoryStore


class ServiceProjects:
    # Given by MemoryService's constructor.
    store: MemoryStore
    clock: Clock
    settings: Settings
    governance_store: Any  # MemoryService.governance_store

    def retention_limit(self, tenant: str, project: str) -> int:
        """The project's retention limit, the deployment's where it has not set one."""
        return self._limit(self.store.retention_limit(tenant, project))

    def _limit(self, own: int | None) -> int:
        return own or self.settings.retention_limit

    def guard_policies(self, tenant: str, project: str) -> Policies:
        """The project's own policies, the deployment's where it has not set one."""
        own = self.store.guard_policies(tenant, project)
        return Policies(secrets=own["secrets_policy"] or self.settings.secrets_policy,
                        pii=own["pii_policy"] or self.settings.pii_policy)

    def projects(self, tenant: str) -> models.ProjectsResult:
        stats = self.store.projects(tenant)
        return models.ProjectsResult(
            projects=[
                models.ProjectInfo(
                    project=s.project, memories=s.memories, pinned=s.pinned, forgotten=s.forgotten,
                    retention_limit=self._limit(s.retention_limit), last_activity=s.last_activity,
                    secrets_policy=p.secrets, pii_policy=p.pii, encryption=self._encryption(tenant, s.project),
                )
                for s, p in zip(stats, [self.guard_policies(tenant, s.project) for s in stats])
            ],
            explanation=f"{len(stats)} project{'s' if len(stats) != 1 else ''}, most recently active first.",
        )

    def _encryption(self, tenant: str, project: str) -> str | None:
        """The project's encryption at rest (capsule.crypto), None where this store seals nothing."""
        sealer = getattr(self.store, "sealer", None)
        return None if sealer is None else sealer.mode(tenant, project)

    def set_project_settings(self, tenant: str, project: str, request: models.ProjectSettingsRequest | dict
                             ) -> models.ProjectsResult:
        """Set the settings given (retention limit, secrets and personal-data policies)."""
        req = validate(models.ProjectSettingsRequest, request)
        validate(models.ListRequest, {"project": project})  # the same name rules as everywhere
        said = []
        if req.retention_limit is not None:
            self.store.set_retention_limit(tenant, project, req.retention_limit, at=self.clock())
            said.append(f"now keeps at most {req.retention_limit} memories;"
                        " the next store evicts the oldest unpinned ones beyond it")
        if req.ephemeral_ttl is not None:
            self.governance_store.set_project_ttl(tenant, project, req.ephemeral_ttl, at=self.clock())
            said.append(f"keeps an ephemeral memory stored without a ttl {req.ephemeral_ttl} seconds")
        policies = {k: v for k, v in (("secrets_policy", req.secrets_policy), ("pii_policy", req.pii_policy)) if v}
        if policies:
            self.store.set_guard_policies(tenant, project, policies, at=self.clock())
            said.append("will " + " and ".join(f"{v} {'secrets' if k == 'secrets_policy' else 'personal data'}"
                                               for k, v in policies.items()) + " found in what is stored next")
        if req.encryption is not None:
            from .crypto.setup import set_encryption

            said.append(set_encryption(self.store, tenant, project, req.encryption, at=self.clock()))
        result = self.projects(tenant)
        result.explanation = f"Project '{project}' " + "; it ".join(said) + "."
        return result

    set_retention_limit = set_project_settings  # the name its first callers know
