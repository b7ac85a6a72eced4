"""Which class and expiry a write asks for, checked against the rules (raises InvalidInput naming
the field, before anything is written).

The rules that need neither the clock nor the stored memory are also stated as JSON Schema
(:data:`EXPIRY_SCHEMA`), from the same names, for the OpenAPI document: a client generated from
it never sends both expiries, or an expiry with a class that does not expire.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from . import retention as rules
from .errors import InvalidInput
from .schema_rules import absent

EXPIRING = "ephemeral"  # the one class that expires
EXPIRIES = ("ttl", "expires_at")  # the two ways to say when (one at most); null is not given

# What _one_expiry and _resolved refuse before looking at the clock or the stored memory, as one
# JSON Schema: no expiry, or one of the two with a retention that is the expiring class or left
# for the stored one (an update) or for the expiry to imply (a new memory). Positive branches
# only (no "not"), so a generator builds valid bodies instead of filtering them.
_OPEN_CLASS = {"retention": {"enum": [EXPIRING, None]}}
EXPIRY_SCHEMA: dict[str, Any] = {
    "anyOf": [
        absent(*EXPIRIES),
        *({"properties": {**_OPEN_CLASS, **absent(other)["properties"]}} for other in EXPIRIES),
    ]
}


def for_new(
    now: datetime, *, retention: str | None, ttl: int | None, expires_at: datetime | None, default_ttl: int
) -> tuple[str, datetime | None]:
    """A new memory's class and expiry: a ttl or expires_at alone means ephemeral."""
    _one_expiry(ttl, expires_at)
    if retention is None and (ttl is not None or expires_at is not None):
        retention = EXPIRING
    return _resolved(now, retention or "auto", ttl, expires_at, default_ttl, current=None)


def for_update(
    now: datetime,
    *,
    current: str,
    current_expiry: datetime | None,
    retention: str | None,
    ttl: int | None,
    expires_at: datetime | None,
    default_ttl: int,
) -> tuple[str, datetime | None]:
    """An existing memory's class and expiry after an update (unchanged when none is given)."""
    _one_expiry(ttl, expires_at)
    wanted = retention or current
    if retention is None and wanted != EXPIRING and (ttl is not None or expires_at is not None):
        field = "ttl" if ttl is not None else "expires_at"
        raise InvalidInput(
            f"{field}: only an ephemeral memory expires; this one is {current} (give retention 'ephemeral' too)",
            field=field,
        )
    return _resolved(now, wanted, ttl, expires_at, default_ttl, current=current_expiry)


def _one_expiry(ttl: int | None, expires_at: datetime | None) -> None:
    if ttl is not None and expires_at is not None:
        raise InvalidInput("expires_at: give ttl or expires_at, not both", field="expires_at")


def _resolved(
    now: datetime,
    retention: str,
    ttl: int | None,
    expires_at: datetime | None,
    default_ttl: int,
    *,
    current: datetime | None,
) -> tuple[str, datetime | None]:
    if retention != EXPIRING:
        if ttl is not None or expires_at is not None:
            field = "ttl" if ttl is not None else "expires_at"
            raise InvalidInput(f"{field}: only an ephemeral memory expires; retention is {retention}", field=field)
        return retention, None
    if expires_at is not None:
        why = rules.check_expires_at(now, expires_at)
        if why:
            raise InvalidInput(f"expires_at: {why}", field="expires_at")
    if ttl is None and expires_at is None and current is not None:
        return retention, current  # still ephemeral, expiry kept
    return retention, rules.expiry(now, ttl=ttl, expires_at=expires_at, default_ttl=default_ttl)
