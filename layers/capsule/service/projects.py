"""A tenant's projects as :class:`~capsule.service.memory_service.MemoryService` reports and sets them: what
each holds, and its settings (the retention limit, the ephemeral ttl, the secrets and
personal-data policies, encryption at rest), each the deployment's where the project has
not set its own; and which project a name means (:meth:`ServiceProjects.project_of`, one
checkout one project: capsule.core.project_identity)."""

from __future__ import annotations

from typing import Any

from ..config import Settings
from ..core import models, project_identity
from ..core.clock import Clock
from ..core.records import WriteOutcome
from ..core.retention import NO_LIMIT, project_limit
from ..guard.policy import Policies
from ..store.base import MemoryStore
from .edge import validate
from .write_notes import retention_note


class ServiceProjects:
    # Given by MemoryService's constructor.
    store: MemoryStore
    clock: Clock
    settings: Settings
    governance_store: Any  # MemoryService.governance_store

    def project_of(self, tenant: str, name: str) -> str:
        """The project ``name`` means for ``tenant``: every operation that names a project asks
        here (capsule.core.project_identity: a path made canonical, a bare name found by its label,
        the bare project of a checkout's label merged into it when the checkout first appears)."""
        resolver = getattr(self, "_project_resolver", None)
        if resolver is None:
            resolver = self._project_resolver = project_identity.Resolver(self.store)
        return resolver(tenant, name, at=self.clock())

    def ensure_project(self, tenant: str, name: str, *, unlimited: bool = False) -> str:
        """The project ``name`` means, made if new; ``unlimited``: a project first written
        through the Vector Bridge's contract (or imported from its database) has no rolling
        limit unless one is set (COMPAT.md §6) -- a limit its user set is kept."""
        project = self.project_of(tenant, validate(models.ListRequest, {"project": name}).project or name)
        if unlimited:
            self.store.set_retention_limit_if_unset(tenant, project, NO_LIMIT, at=self.clock())
        return project

    def retention_limit(self, tenant: str, project: str) -> int | None:
        """The project's retention limit, the deployment's where it has not set one; None where
        it has no rolling limit."""
        return self._limit(self.store.retention_limit(tenant, project))

    def _limit(self, own: int | None) -> int | None:
        return project_limit(own, self.settings.retention_limit)

    def guard_policies(self, tenant: str, project: str) -> Policies:
        """The project's own policies, the deployment's where it has not set one."""
        own = self.store.guard_policies(tenant, project)
        return Policies(
            secrets=own["secrets_policy"] or self.settings.secrets_policy,
            pii=own["pii_policy"] or self.settings.pii_policy,
        )

    def projects(self, tenant: str) -> models.ProjectsResult:
        stats = self.store.projects(tenant)
        return models.ProjectsResult(
            projects=[
                models.ProjectInfo(
                    project=s.project,
                    root_path=project_identity.root_path(s.project),
                    label=project_identity.label_of(s.project),
                    memories=s.memories,
                    pinned=s.pinned,
                    forgotten=s.forgotten,
                    retention_limit=self._limit(s.retention_limit),
                    last_activity=s.last_activity,
                    secrets_policy=p.secrets,
                    pii_policy=p.pii,
                    encryption=self._encryption(tenant, s.project),
                )
                for s, p in zip(stats, [self.guard_policies(tenant, s.project) for s in stats])
            ],
            explanation=f"{len(stats)} project{'s' if len(stats) != 1 else ''}, most recently active first.",
        )

    def _encryption(self, tenant: str, project: str) -> str | None:
        """The project's encryption at rest (capsule.crypto), None where this store seals nothing."""
        sealer = getattr(self.store, "sealer", None)
        return None if sealer is None else sealer.mode(tenant, project)

    def set_project_settings(
        self, tenant: str, project: str, request: models.ProjectSettingsRequest | dict
    ) -> models.ProjectsResult:
        """Set the settings given (retention limit, secrets and personal-data policies)."""
        req = validate(models.ProjectSettingsRequest, request)
        named = validate(models.ListRequest, {"project": project}).project  # the same name rules as everywhere
        project = self.project_of(tenant, named or project)
        said: list[str] = []
        evicted: list[models.Eviction] = []
        if req.retention_limit == "unlimited":
            self.store.set_retention_limit(tenant, project, NO_LIMIT, at=self.clock())
            said.append("has no rolling limit now: every memory is kept until forgotten")
        elif req.retention_limit is not None:
            evicted, note = self._lower_limit(tenant, project, req.retention_limit)
            said.append(f"now keeps at most {req.retention_limit} memories" + note)
        if req.ephemeral_ttl is not None:
            self.governance_store.set_project_ttl(tenant, project, req.ephemeral_ttl, at=self.clock())
            said.append(f"keeps an ephemeral memory stored without a ttl {req.ephemeral_ttl} seconds")
        policies: dict[str, str] = {
            k: v for k, v in (("secrets_policy", req.secrets_policy), ("pii_policy", req.pii_policy)) if v
        }
        if policies:
            self.store.set_guard_policies(tenant, project, policies, at=self.clock())
            said.append(
                "will "
                + " and ".join(
                    f"{v} {'secrets' if k == 'secrets_policy' else 'personal data'}" for k, v in policies.items()
                )
                + " found in what is stored next"
            )
        if req.encryption is not None:
            from ..sealing.setup import set_encryption

            said.append(set_encryption(self.store, tenant, project, req.encryption, at=self.clock()))
        result = self.projects(tenant)
        result.evicted = evicted
        result.explanation = f"Project '{project}' " + "; it ".join(said) + "."
        return result

    def _lower_limit(self, tenant: str, project: str, limit: int) -> tuple[list[models.Eviction], str]:
        """Set the limit; what it leaves beyond it is evicted now, named in this answer (never
        later by a job no answer announced), oldest unpinned first, pinned and irreplaceable kept."""
        self.store.set_retention_limit(tenant, project, limit, at=self.clock())
        outcome = WriteOutcome(limit=limit)
        outcome.evicted = self.store.enforce_limit(tenant, project, limit=limit, at=self.clock(), actor=tenant)
        if not outcome.evicted:
            return [], "; a store beyond it evicts the oldest unpinned one, naming it"
        evicted, note = retention_note(outcome)
        return evicted, ";" + note.rstrip(".")

    set_retention_limit = set_project_settings  # the name its first callers know
