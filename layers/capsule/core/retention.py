"""Retention classes: what the rolling limit, ``forget`` and the retention job may do to a memory.

=============== ========================= ======================= =========================
class           evicted by the limit      forget                  expires
=============== ========================= ======================= =========================
irreplaceable   never                     only with ``force`` (*) never
permanent       never                     yes                     never
replaceable     yes (oldest first)        yes                     never
ephemeral       yes (oldest first)        yes                     at ``expires_at`` (TTL)
auto (default)  as irreplaceable when pinned, else as replaceable
=============== ========================= ======================= =========================

(*) declared ``irreplaceable``; a pinned ``auto`` memory forgets without it (see :func:`needs_force`).

The rolling limit (COMPAT.md §4.5, §6): a project's limit is an integer, or *none* (stored as 0,
:data:`NO_LIMIT`): a project written through the Vector Bridge's contract, or imported from
its database, keeps the no-limit behaviour it had. Nothing is evicted that no answer
announced: only a write evicts by the limit, naming every memory it evicts in its own answer
(one oldest unpinned per store when the project holds its limit, as the first Capsule did); a
lowered limit evicts in the settings answer that lowers it; an ingest of more chunks than the
limit is refused before anything is written (409 naming the limit), as it could only be
kept by evicting its own chunks; the retention job evicts nothing by the limit.

Pure functions: the stores and the service read the rules from here.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from . import limits

RetentionClass = Literal["irreplaceable", "permanent", "replaceable", "ephemeral", "auto"]
EffectiveClass = Literal["irreplaceable", "permanent", "replaceable", "ephemeral"]
NEVER_EVICTED: tuple[str, ...] = ("irreplaceable", "permanent")  # declared classes the limit skips
AUTO_LIKE: tuple[str | None, ...] = ("auto", None)  # a memory stored before classes existed is auto


NO_LIMIT = 0  # a project's stored retention_limit meaning "no rolling limit" (None: the default)


def project_limit(own: int | None, default: int) -> int | None:
    """The limit that applies to a project: its own, the deployment's where it has none, and
    None where it has no rolling limit (own = :data:`NO_LIMIT`)."""
    if own == NO_LIMIT:
        return None
    return own or default


def over_limit(held: int, own: int | None, default: int) -> bool:
    limit = project_limit(own, default)
    return limit is not None and held > limit


def effective_class(retention: str | None, pinned: bool) -> str:
    """The class that applies: ``auto`` (or none) is irreplaceable when pinned, else replaceable."""
    if retention in AUTO_LIKE:
        return "irreplaceable" if pinned else "replaceable"
    return retention  # type: ignore[return-value]


def evictable(retention: str | None, pinned: bool) -> bool:
    return not pinned and effective_class(retention, pinned) not in NEVER_EVICTED


def needs_force(retention: str | None, pinned: bool) -> bool:
    """Forgetting a memory declared irreplaceable must be asked for with ``force``. A pinned
    ``auto`` memory is irreplaceable to the limit but forgets as before: clients of the first
    Capsule forget pinned memories, and must switch unchanged."""
    return retention == "irreplaceable"


def expiry(
    now: datetime,
    *,
    ttl: int | None,
    expires_at: datetime | None,
    default_ttl: int = limits.DEFAULT_EPHEMERAL_TTL_SECONDS,
) -> datetime:
    """When an ephemeral memory expires: ``expires_at``, else now + ``ttl``, else the default."""
    if expires_at is not None:
        return expires_at
    return now + timedelta(seconds=ttl if ttl is not None else default_ttl)


def check_expires_at(now: datetime, expires_at: datetime) -> str | None:
    """Why ``expires_at`` is refused (None: it is fine): it must be ahead, within the TTL bounds."""
    ahead = (expires_at - now).total_seconds()
    if ahead < 1:
        return "must be in the future"
    if ahead > limits.MAX_TTL_SECONDS:
        return f"must be at most {limits.MAX_TTL_SECONDS} seconds (10 years) ahead"
    return None


def eviction_reason(limit: int, klass: str) -> str:
    """The explanation of one eviction by the rolling limit, naming the memory's class."""
    return (
        f"the project holds its rolling limit of {limit} memories; this was the oldest unpinned one of an"
        f" evictable class (class {klass}; irreplaceable and permanent memories are never evicted)"
    )
