"""The one place a memory's content passes on its way in (store, ingest, update, revert).

Today it only returns the text as given. Detectors that flag or redact secrets and personal
data (and refuse by project policy) plug in here, so every way in goes through them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Intake:
    """What passes in: the text to store and anything a detector found (kept on the memory)."""

    content: str
    findings: dict[str, Any] = field(default_factory=dict)


def admit(tenant: str, project: str, content: str) -> Intake:
    """The content as it is to be stored (a detector may redact it, or raise InvalidInput)."""
    return Intake(content)
