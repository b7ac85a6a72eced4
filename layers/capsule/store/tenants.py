"""Merging tenants stored under assumed-role session ARNs into their role's tenant.

Before the hosted API mapped an assumed role to its role (``functions/tenancy.py``), each
session (``arn:aws:sts::A:assumed-role/NAME/botocore-session-1733000000``) was a tenant of
its own. :func:`plan` groups the stored tenants that are sessions under the role tenant
(``arn:aws:iam::A:role/NAME``) they now belong to; :func:`merge` moves each one with a
store's :class:`TenantMover` (``capsule.store.sqlite_tenants``, ``capsule.store.mongo_tenants``).

A dry run (the default) only counts what would move. Applying is idempotent: a session
tenant that was moved holds nothing, so a second run finds nothing to do, and a run that
stopped half way is finished by the next one.

Projects of one name become one, under the target's retention limit (or the source's, or the
deployment's default). When the merged project would hold more than that limit, the limit is
raised to what it holds first (:func:`raised_limits`): each session kept its memories under
its own limit, and a merge must not hand them to the next eviction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from ..core.limits import DEFAULT_RETENTION_LIMIT, MAX_RETENTION_LIMIT
from ..core.records import ProjectStats

_ASSUMED_ROLE = re.compile(r"^arn:(?P<partition>[\w-]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/.+$")


def role_of_session(arn: str) -> str | None:
    """``arn:aws:sts::A:assumed-role/NAME/SESSION`` -> ``arn:aws:iam::A:role/NAME``; None for others.

    The assumed-role ARN carries no role path; a role's name is unique in its account
    whatever its path, so ``role/NAME`` names one role."""
    match = _ASSUMED_ROLE.match(arn)
    if match is None:
        return None
    return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"


class TenantMover(Protocol):
    """What a store offers the merge (one implementation per store, beside it)."""

    def tenants(self) -> list[str]:
        """Every tenant that holds anything in the store (memories, projects, solutions, patterns...)."""

    def count(self, tenant: str) -> dict[str, int]:
        """How many rows/documents of each kind ``tenant`` holds (kinds with none left out)."""

    def move(self, source: str, target: str) -> dict[str, int]:
        """Move everything of ``source`` into ``target``; returns what moved, by kind.

        Projects of the same name become one (the target's settings kept); rows keyed by
        tenant that both hold (a pattern, a link's counters) are combined, not duplicated.
        Each project's memories move in one write, so a reader sees all of them or none."""


@dataclass
class Move:
    source: str
    target: str
    counts: dict[str, int] = field(default_factory=dict)
    raised: dict[str, int] = field(default_factory=dict)  # project -> its new retention limit


@dataclass
class MergeReport:
    applied: bool
    moves: list[Move] = field(default_factory=list)

    @property
    def explanation(self) -> str:
        if not self.moves:
            return "no tenant is an assumed-role session: nothing to merge"
        verb = "moved" if self.applied else "would move"
        lines = []
        for m in self.moves:
            lines.append(f"{verb} {_describe(m.counts)} from {m.source} into {m.target}")
            lines += [
                f"  {'raised' if self.applied else 'would raise'} the retention limit of {m.target} "
                f"project {project} to {limit}, the memories it holds merged"
                for project, limit in sorted(m.raised.items())
            ]
        if not self.applied:
            lines.append("dry run: nothing changed (run again with --apply)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        return {
            "applied": self.applied,
            "moves": [
                {"from": m.source, "to": m.target, "counts": m.counts, "raised_limits": m.raised} for m in self.moves
            ],
        }


def _describe(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()) if n) or "nothing"


def plan(tenants: Iterable[str], *, role: str | None = None) -> list[tuple[str, str]]:
    """``(session tenant, role tenant)`` for every stored tenant that is a session, sorted;
    ``role`` keeps only that role's sessions."""
    pairs = [(t, r) for t in tenants if (r := role_of_session(t)) is not None]
    return sorted(p for p in pairs if role is None or p[1] == role)


def raised_limits(source: Iterable[ProjectStats], target: Iterable[ProjectStats], default_limit: int) -> dict[str, int]:
    """``project -> limit`` for each merged project that would hold more active memories than
    its limit (the target's, else the source's, else ``default_limit``)."""
    held = {p.project: p for p in target}
    raised = {}
    for moving in source:
        there = held.get(moving.project)
        merged = moving.memories + (there.memories if there else 0)
        limit = (there.retention_limit if there else None) or moving.retention_limit or default_limit
        if merged > limit:
            raised[moving.project] = min(merged, MAX_RETENTION_LIMIT)
    return raised


def merge(
    mover: TenantMover,
    *,
    apply: bool = False,
    role: str | None = None,
    store: Any = None,
    default_limit: int = DEFAULT_RETENTION_LIMIT,
    at: datetime | None = None,
) -> MergeReport:
    """Merge every session tenant into its role's tenant (``apply=False``: only count).

    ``store`` (the memory store the mover works on) lets the merge keep every merged memory
    under its project's retention limit (:func:`raised_limits`)."""
    report = MergeReport(applied=apply)
    when = at or datetime.now(UTC)
    for source, target in plan(mover.tenants(), role=role):
        raised = {} if store is None else raised_limits(store.projects(source), store.projects(target), default_limit)
        if apply:
            for project, limit in raised.items():  # first, so no write in between evicts
                store.set_retention_limit(target, project, limit, at=when)
        counts = mover.move(source, target) if apply else mover.count(source)
        if any(counts.values()):
            report.moves.append(Move(source, target, counts, raised))
    return report


def mover_for(store: object) -> TenantMover:
    """The :class:`TenantMover` of a memory store (SQLite or MongoDB)."""
    store = getattr(store, "backing_store", store)  # a sealed store: the sealed rows as stored
    from .sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        from .sqlite_tenants import SQLiteTenantMover

        return SQLiteTenantMover(store)
    from .mongo import MongoStore  # the 'mongo' extra

    if isinstance(store, MongoStore):
        from .mongo_tenants import MongoTenantMover

        return MongoTenantMover(store)
    raise TypeError(f"no tenant mover for {type(store).__name__}")
