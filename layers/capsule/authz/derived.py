"""Objects derived from memories, shown to a limited principal only when derived from memories
it can read.

A pattern is mined from failure memories of any project: its ``projects``, ``examples`` (memory
ids), ``terms`` and ``description`` (a member's text) all come from them. A principal limited to
projects sees a pattern whose projects are all its own; one limited to subjects or to what it
sees, a pattern whose every member it can read (the examples must then name them all). A pattern
made by links alone (no occurrences) comes from solutions, the tenant's shared knowledge, and is
shown to all. A fix memory linked to a pattern is shown when the memory itself is readable.

What is not shown is left out of a list, or withheld in place where the answer has one pattern
(its tag and category, which the caller named, and nothing derived from memories).

An audit record (who forgot, pinned, changed or evicted which memory, when and why) is about
one memory: a principal limited to projects sees the records of its projects (it reads every
memory there); one limited to subjects or to what it sees, the records of memories it can read
now (a memory purged since cannot be checked, and is not shown).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from ..core.errors import NotFound
from ..governance.visibility import Reach
from .needs import need_of

WITHHELD = "Withheld: derived from memories outside this key's reach."


class Readable:
    """What one principal can read, memory by memory (each id read once per request)."""

    def __init__(self, reach: Reach, memory: Callable[[str], Any]) -> None:
        self.reach = reach
        self._memory = memory
        self._seen: dict[str, bool] = {}

    def memory(self, memory_id: str) -> bool:
        if memory_id not in self._seen:
            try:
                record = self._memory(memory_id)
            except NotFound:
                self._seen[memory_id] = False  # gone, or never this tenant's: nothing to show
            else:
                self._seen[memory_id] = self.reach.can_see(record.project, record.subject, record.visibility)
        return self._seen[memory_id]

    def pattern(self, pattern: Any) -> bool:
        """``pattern``: anything with projects, examples and occurrences (a record, a view, a row)."""
        projects, examples, occurrences = (
            _get(pattern, "projects"),
            _get(pattern, "examples"),
            _get(pattern, "occurrences"),
        )
        if self.reach.unrestricted:
            return True
        if not all(self.reach.allows_project(p) for p in projects or ()):
            return False
        if not occurrences and not examples:
            return True  # made by links: derived from solutions, not memories
        if self.reach.subjects is None and self.reach.sees == "private":
            return True  # its members are all in the principal's projects, and it reads all of them
        if len(examples or ()) < (occurrences or 0):
            return False  # members the examples do not name cannot be checked
        return all(self.memory(m) for m in examples)


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


# ---- answers ------------------------------------------------------------------------------------


def narrow(operation: str, result: Any, readable: Readable) -> Any:
    """``result`` as the principal may see it: unchanged for a principal limited in nothing, or
    an operation whose answer carries nothing derived from memories."""
    if readable.reach.unrestricted or not need_of(operation).derived or not isinstance(result, BaseModel):
        return result
    return _narrow(result, readable)


def _kinds() -> tuple[Any, Any, Any]:
    from ..learning import models as lm  # the learning package loads its own parts: only when needed

    return lm.Pattern, lm.LinkedFix, lm.GoldenPath


def _hidden(value: Any, readable: Readable) -> bool:
    pattern_kind, fix_kind, golden_kind = _kinds()
    if isinstance(value, pattern_kind):
        return not readable.pattern(value)
    if isinstance(value, fix_kind):
        return not readable.memory(value.memory_id)
    inner = getattr(value, "pattern", None)
    if isinstance(value, BaseModel) and isinstance(inner, pattern_kind) and not readable.pattern(inner):
        return True  # a match or a golden path of a pattern it may not see
    if isinstance(value, golden_kind) and value.solution is None and value.fix is not None:
        return not readable.memory(value.fix.memory_id)
    return False


def _narrow(value: Any, readable: Readable) -> Any:
    pattern_kind, fix_kind, _ = _kinds()
    if isinstance(value, list):
        return [_narrow(item, readable) for item in value if not _hidden(item, readable)]
    if not isinstance(value, BaseModel):
        return value
    if isinstance(value, pattern_kind):
        return (
            value
            if readable.pattern(value)
            else value.model_copy(
                update={
                    "terms": [],
                    "occurrences": 0,
                    "projects": [],
                    "examples": [],
                    "description": WITHHELD,
                    "first_seen": None,
                    "last_seen": None,
                }
            )
        )
    if isinstance(value, fix_kind):
        return value  # a fix in a list was dropped by _hidden; one on its own, by its holder
    changes: dict[str, Any] = {}
    for name in type(value).model_fields:
        field = getattr(value, name)
        if isinstance(field, fix_kind) and not readable.memory(field.memory_id):
            changes[name] = None
            continue
        narrowed = _narrow(field, readable)
        if narrowed is not field and narrowed != field:
            changes[name] = narrowed
    return value.model_copy(update=changes) if changes else value


# ---- audit records ----------------------------------------------------------------------------


def audit_keep(readable: Readable) -> Callable[[Any], bool] | None:
    """Which audit records (anything with ``memory_id`` and ``project``) the principal is shown
    (None: every record)."""
    reach = readable.reach
    if reach.unrestricted:
        return None

    def keep(record: Any) -> bool:
        if not reach.allows_project(str(_get(record, "project"))):
            return False
        if reach.subjects is None and reach.sees == "private":
            return True  # it reads every memory of its projects
        return readable.memory(str(_get(record, "memory_id")))

    return keep


# ---- export rows ----------------------------------------------------------------------------


def export_keep(readable: Readable, pattern: Callable[[str, str], Any]) -> Callable[[Mapping[str, Any]], bool] | None:
    """Which rows of an export the principal receives (None: every row). ``pattern(tag,
    category)`` reads a pattern (raises NotFound) for the link and evidence rows that name one."""
    reach = readable.reach
    if reach.unrestricted:
        return None

    def pattern_shown(tag: str, category: str) -> bool:
        try:
            return readable.pattern(pattern(tag, category))
        except NotFound:
            return False

    def keep(row: Mapping[str, Any]) -> bool:
        kind = row.get("kind")
        if kind == "pattern":
            return readable.pattern(row)
        if kind in ("link", "evidence"):
            if row.get("target_kind") == "memory" and not readable.memory(str(row.get("target_id"))):
                return False
            return pattern_shown(str(row.get("tag")), str(row.get("category")))
        if kind == "memory":
            return reach.can_see(str(row.get("project")), row.get("subject"), row.get("visibility"))
        project = row.get("project")
        return not isinstance(project, str) or reach.allows_project(project)

    return keep
