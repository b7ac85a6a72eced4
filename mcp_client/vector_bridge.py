"""The Vector Bridge's MCP names, mapped onto ours: the one place that knows them.

Our own tools take a Vector Bridge argument name beside ours where the two mean the same
(``project_root`` for ``project``, ...): :func:`translate` turns its names into ours before they
are validated. A call in its whole dialect is answered by :mod:`.vb_dialect` instead. Its ids are
integers; ours are strings, so an integer id is taken as the string of its digits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Per tool: its Vector Bridge argument name -> ours. A rename applies only to a tool that has the target.
COMMON = {"project_root": "project"}
RENAMES: dict[str, dict[str, str]] = {
    "memory_store": {"outcome_status": "outcome"},
    "memory_search": {"global": "all_projects", "limit": "k"},
    "memory_feedback": {"chunk_id": "id"},
    "solution_search": {"error_message": "error", "limit": "k"},
    "pattern_detect": {"query_text": "error", "error_message": "error", "limit": "k"},
    "pattern_solutions": {"pattern_tag": "tag", "pattern_category": "category", "limit": "k"},
    "pattern_link": {"pattern_tag": "tag", "pattern_category": "category"},
    "golden_paths": {"limit": "k"},
    "detect_patterns": {"limit": "k"},
}
# Arguments that name a memory or a solution: the Vector Bridge sends them as integers.
ID_ARGUMENTS = frozenset({"id", "solution_id"})


class Conflict(ValueError):
    """Both our name and its Vector Bridge name were given."""


def renames(tool: str, fields: set[str]) -> dict[str, str]:
    """The Vector Bridge names ``tool`` accepts (those whose target is one of its ``fields``)."""
    table = {**COMMON, **RENAMES.get(tool, {})}
    return {theirs: ours for theirs, ours in table.items() if ours in fields and theirs not in fields}


def translate(tool: str, arguments: Mapping[str, Any], fields: set[str]) -> dict[str, Any]:
    """``arguments`` with Vector Bridge names replaced by ours and integer ids made strings.
    Unknown names pass through untouched, for the caller to refuse."""
    table = renames(tool, fields)
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        ours = table.get(name, name)
        if ours in out or (ours != name and ours in arguments):
            raise Conflict(f"give '{ours}' or '{name}' (its Vector Bridge name), not both")
        out[ours] = value
    for name in ID_ARGUMENTS & out.keys():
        if type(out[name]) is int:  # not bool: True is no id
            out[name] = str(out[name])
    return out


def published(tool: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (a tool's input schema) with its ids open to integers. The Vector Bridge's names
    are not listed beside ours: a call using them is answered in its own dialect
    (:mod:`.vb_dialect`), and every listed name is paid for in every conversation."""
    properties = {name: _id_schema(name, dict(prop)) for name, prop in schema.get("properties", {}).items()}
    return {**schema, "properties": properties}


def _id_schema(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if name not in ID_ARGUMENTS or schema.get("type") == "integer":
        return schema
    kept = {k: v for k, v in schema.items() if k in ("title", "description")}
    return {**kept, "anyOf": [{k: v for k, v in schema.items() if k not in kept}, {"type": "integer"}]}


__all__ = ["translate", "renames", "published", "Conflict", "ID_ARGUMENTS"]
