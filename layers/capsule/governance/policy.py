"""Which class and expiry a write asks for, checked against the rules (raises InvalidInput naming
the field, before anything is written)."""

from __future__ import annotations

from datetime import datetime

from ..errors import InvalidInput
from . import retention as rules


def for_new(now: datetime, *, retention: str | None, ttl: int | None, expires_at: datetime | None,
            default_ttl: int) -> tuple[str, datetime | None]:
    """A new memory's class and expiry: a ttl or expires_at alone means ephemeral."""
    _one_expiry(ttl, expires_at)
    if retention is None and (ttl is not None or expires_at is not None):
        retention = "ephemeral"
    return _resolved(now, retention or "auto", ttl, expires_at, default_ttl, current=None)


def for_update(now: datetime, *, current: str, current_expiry: datetime | None, retention: str | None,
               ttl: int | None, expires_at: datetime | None, default_ttl: int) -> tuple[str, datetime | None]:
    """An existing memory's class and expiry after an update (unchanged when none is given)."""
    _one_expiry(ttl, expires_at)
    wanted = retention or current
    if retention is None and wanted != "ephemeral" and (ttl is not None or expires_at is not None):
        field = "ttl" if ttl is not None else "expires_at"
        raise InvalidInput(f"{field}: only an ephemeral memory expires; this one is {current}"
                           " (give retention 'ephemeral' too)", field=field)
    return _resolved(now, wanted, ttl, expires_at, default_ttl, current=current_expiry)


def _one_expiry(ttl: int | None, expires_at: datetime | None) -> None:
    if ttl is not None and expires_at is not None:
        raise InvalidInput("expires_at: give ttl or expires_at, not both", field="expires_at")


def _resolved(now: datetime, retention: str, ttl: int | None, expires_at: datetime | None, default_ttl: int, *,
              current: datetime | None) -> tuple[str, datetime | None]:
    if retention != "ephemeral":
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
