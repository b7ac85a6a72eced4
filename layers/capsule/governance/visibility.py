"""Visibility, subject and the caller's reach: who may read and write which memories (pure).

A memory's ``visibility`` says how far it may be read inside its tenant:

- ``private`` (the default): only by callers whose reach sees private memories (the tenant's
  own token, its unscoped keys and principals, and keys scoped with ``sees: private``);
- ``shared``: also by callers that see shared memories (team or agent keys, ``sees: shared``);
- ``public``: also by callers that see only public memories (a public-facing bot's key,
  ``sees: public``).

It is one ladder: a caller that sees ``shared`` sees shared and public memories, one that
sees ``public`` sees public ones only. Visibility never crosses tenants, and never widens a
caller's projects or subjects: those bound everything a caller reaches (:class:`Reach`).

A memory whose stored text carries personal data (the guard's flags in ``meta._guard``)
cannot be public (:func:`public_refusal`); redact it first (an update of its content).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import Conflict, Forbidden
from .names import VISIBILITIES

DEFAULT_VISIBILITY = "private"
ACCESS_LEVELS = ("read", "write", "admin")
_RANK = {name: rank for rank, name in enumerate(VISIBILITIES)}
_ACCESS = {name: rank for rank, name in enumerate(ACCESS_LEVELS)}
GUARD_KEY = "_guard"  # capsule.guard.policy.GUARD_KEY (not imported: the guard loads its detectors)


def visible_levels(sees: str) -> tuple[str, ...]:
    """The visibilities a caller that sees ``sees`` may read (``private``: all three)."""
    return VISIBILITIES[_RANK[sees] :]


def flagged_kinds(meta: Mapping[str, Any]) -> list[str]:
    """The kinds the guard flagged (kept in clear: personal data, or secrets under a ``flag``
    policy) in a memory's text, explanation or meta, as ``meta._guard`` records them."""
    report = meta.get(GUARD_KEY)
    if not isinstance(report, Mapping):
        return []
    kinds: set[str] = set()
    for part in (report, report.get("explanation")):
        if isinstance(part, Mapping):
            for category in ("pii", "secrets"):
                for finding in part.get(category) or []:
                    if isinstance(finding, Mapping) and finding.get("action") == "flagged":
                        kinds.add(str(finding.get("kind")))
    meta_part = report.get("meta")
    if isinstance(meta_part, Mapping):
        kinds.update(str(k) for k in meta_part.get("flagged") or [])
    return sorted(kinds)


def public_refusal(visibility: str, meta: Mapping[str, Any], memory: str = "the memory") -> Conflict | None:
    """The 409 that refuses making a memory with personal-data flags public, or None."""
    if visibility != "public":
        return None
    kinds = flagged_kinds(meta)
    if not kinds:
        return None
    return Conflict(
        f"visibility: {memory} holds data the guard flagged ({', '.join(kinds)}); it cannot be "
        "public until that is redacted (update its content without it)",
        details=[{"field": "visibility", "message": "flagged: " + ", ".join(kinds), "flags": kinds}],
    )


# ---- the caller's reach ---------------------------------------------------------------------

_PATTERN_CHARS = re.compile(r"^[^\x00-\x1f\x7f]+$")


def pattern_problem(pattern: str) -> str | None:
    """Why a project pattern (fnmatch: ``*``, ``?``, ``[...]``) is refused, or None."""
    if not isinstance(pattern, str) or not _PATTERN_CHARS.match(pattern):
        return "must be 1 or more characters without control characters"
    depth = 0
    for index, char in enumerate(pattern):
        if char == "[":
            if depth:
                return f"has a '[' inside a '[...]' class at {index}"
            if pattern[index + 1 : index + 2] == "]":
                return f"has an empty '[]' class at {index}"
            depth = 1
        elif char == "]" and depth:
            depth = 0
    return "has a '[' that is never closed" if depth else None


@dataclass(frozen=True, slots=True)
class Reach:
    """What one caller may do: an access level, the projects (fnmatch patterns; None: all),
    the subjects (exact names; None: any, with or without one) and the most private visibility
    it reads. The default is the tenant's full access, as every caller had before scopes."""

    access: str = "admin"
    projects: tuple[str, ...] | None = None
    subjects: tuple[str, ...] | None = None
    sees: str = "private"
    who: str = "the caller"  # how refusals name it ("API key 'bot'")

    @property
    def unrestricted(self) -> bool:
        return self.projects is None and self.subjects is None and self.sees == "private"

    def has_access(self, needed: str) -> bool:
        return _ACCESS[self.access] >= _ACCESS[needed]

    def require_access(self, needed: str, operation: str) -> None:
        if not self.has_access(needed):
            raise Forbidden(
                f"{operation} needs the '{needed}' scope; {self.who} has '{self.access}'",
                details=[{"field": "scope", "message": f"missing scope {needed}", "missing": needed}],
            )

    def allows_project(self, project: str) -> bool:
        return self.projects is None or any(fnmatch.fnmatchcase(project, p) for p in self.projects)

    def require_project(self, project: str) -> None:
        if not self.allows_project(project):
            raise Forbidden(
                f"project: {self.who} is scoped to projects {', '.join(self.projects or ())}; "
                f"{project!r} is not one of them",
                details=[
                    {
                        "field": "project",
                        "message": f"not in the key's projects: {project}",
                        "missing": f"project:{project}",
                    }
                ],
            )

    def require_whole_tenant(self, operation: str) -> None:
        """A route that reaches every project (and every subject) of the tenant."""
        limits = [
            name
            for name, on in (("projects", self.projects is not None), ("subjects", self.subjects is not None))
            if on
        ]
        if limits:
            raise Forbidden(
                f"{operation} reaches every project of the tenant; {self.who} is limited to {' and '.join(limits)}",
                details=[
                    {
                        "field": "scope",
                        "message": "needs a key not limited to " + " or ".join(limits),
                        "missing": "tenant",
                    }
                ],
            )

    def require_every_memory(self, operation: str) -> None:
        """A route that hands over every memory of a project, whatever its subject or visibility."""
        limits = [
            name
            for name, on in (
                ("subjects", self.subjects is not None),
                (f"seeing {self.sees} memories", self.sees != "private"),
            )
            if on
        ]
        if limits:
            raise Forbidden(
                f"{operation} hands over every memory of the project; {self.who} is limited to {' and '.join(limits)}",
                details=[
                    {
                        "field": "scope",
                        "message": "needs a key not limited to subjects or visibility",
                        "missing": "sees:private" if self.sees != "private" else "subjects",
                    }
                ],
            )

    def allows_subject(self, subject: str | None) -> bool:
        return self.subjects is None or (subject is not None and subject in self.subjects)

    def allows_visibility(self, visibility: str | None) -> bool:
        return _RANK[visibility or DEFAULT_VISIBILITY] >= _RANK[self.sees]

    def can_see(self, project: str, subject: str | None, visibility: str | None) -> bool:
        return self.allows_project(project) and self.allows_subject(subject) and self.allows_visibility(visibility)

    def require_memory(self, memory_id: str, project: str, subject: str | None, visibility: str | None) -> None:
        """A memory this caller names by id: in its projects, of its subjects, visible to it."""
        self.require_project(project)
        if not self.allows_subject(subject):
            raise Forbidden(
                f"subject: memory {memory_id} is about {subject or 'no subject'}; {self.who} is scoped to "
                f"subjects {', '.join(self.subjects or ())}",
                details=[
                    {"field": "subject", "message": "not in the key's subjects", "missing": f"subject:{subject or ''}"}
                ],
            )
        if not self.allows_visibility(visibility):
            raise Forbidden(
                f"visibility: memory {memory_id} is {visibility or DEFAULT_VISIBILITY}; {self.who} sees "
                f"only {' and '.join(visible_levels(self.sees))} memories",
                details=[
                    {
                        "field": "visibility",
                        "message": f"the key sees {self.sees} and wider",
                        "missing": f"sees:{visibility or DEFAULT_VISIBILITY}",
                    }
                ],
            )

    def require_write(self, project: str, subject: str | None, visibility: str | None) -> None:
        """What a store, ingest or update would write: the caller must be able to read it back."""
        self.require_project(project)
        if not self.allows_subject(subject):
            named = f"subject {subject!r}" if subject else "no subject"
            raise Forbidden(
                f"subject: {self.who} is scoped to subjects {', '.join(self.subjects or ())}; "
                f"a memory with {named} is outside it",
                details=[
                    {
                        "field": "subject",
                        "message": "give one of the key's subjects",
                        "missing": f"subject:{subject or ''}",
                    }
                ],
            )
        if not self.allows_visibility(visibility):
            raise Forbidden(
                f"visibility: {self.who} sees only {' and '.join(visible_levels(self.sees))} memories; "
                f"it cannot write a {visibility or DEFAULT_VISIBILITY} one",
                details=[
                    {
                        "field": "visibility",
                        "message": f"the key sees {self.sees} and wider",
                        "missing": f"sees:{visibility or DEFAULT_VISIBILITY}",
                    }
                ],
            )

    def visibilities(self, wanted: str | None) -> tuple[str, ...]:
        """The visibilities a list or search returns: the one asked for (if visible), else all visible."""
        levels = visible_levels(self.sees)
        if wanted is None:
            return () if self.sees == "private" else levels
        if wanted not in levels:
            raise Forbidden(
                f"visibility: {self.who} sees only {' and '.join(levels)} memories",
                details=[
                    {
                        "field": "visibility",
                        "message": f"the key sees {self.sees} and wider",
                        "missing": f"sees:{wanted}",
                    }
                ],
            )
        return (wanted,)

    def subjects_for(self, wanted: str | None) -> tuple[str, ...]:
        """The subjects a list or search returns (empty: any)."""
        if wanted is None:
            return self.subjects or ()
        if not self.allows_subject(wanted):
            raise Forbidden(
                f"subject: {self.who} is scoped to subjects {', '.join(self.subjects or ())}",
                details=[{"field": "subject", "message": "not in the key's subjects", "missing": f"subject:{wanted}"}],
            )
        return (wanted,)

    def projects_among(self, projects: Iterable[str]) -> list[str]:
        return [p for p in projects if self.allows_project(p)]


FULL = Reach()
