"""The Vector Bridge's arguments, checked as its server checked them (COMPAT §1.1).

Its server validated with zod: numbers must be JSON numbers, booleans JSON booleans, ``null``
refused for an optional field, a required one missing refused; unknown keys were dropped.
We accept the same (a digit string is also taken where an id is asked for, COMPAT §6), and
keys we do not use are named back to the caller rather than dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Per tool: argument -> (JSON type, required). "id" is an integer or a string of an id.
SPEC: dict[str, dict[str, tuple[str, bool]]] = {
    "memory_ingest": {
        "project_root": ("string", True),
        "path": ("string", True),
        "text": ("string", True),
        "meta": ("object", False),
    },
    "memory_search": {
        "project_root": ("string|null", True),
        "query": ("string", True),
        "k": ("number", False),
        "global": ("boolean", False),
        "component": ("string", False),
        "category": ("string", False),
    },
    "memory_feedback": {"chunk_id": ("id", True), "helpful": ("boolean", True), "context": ("string", False)},
    "solution_search": {
        "error_message": ("string", True),
        "category": ("string", False),
        "component": ("string", False),
        "limit": ("number", False),
    },
    "solution_preview": {"solution_id": ("id", True)},
    "solution_apply": {"solution_id": ("id", True), "success": ("boolean", True)},
    "solution_upsert": {
        "title": ("string", True),
        "description": ("string", True),
        "category": ("string", True),
        "signatures": ("array", True),
        "steps": ("array", True),
        "component": ("string", False),
        "tags": ("array", False),
        "project_root": ("string", False),
        "package_manager": ("string", False),
        "monorepo_tool": ("string", False),
        "checks": ("array", False),
    },
    "pattern_detect": {"query_text": ("string", True), "limit": ("number", False)},
    "pattern_solutions": {
        "pattern_tag": ("string", True),
        "pattern_category": ("string", False),
        "limit": ("number", False),
    },
    "pattern_link": {
        "pattern_tag": ("string", True),
        "pattern_category": ("string", True),
        "solution_id": ("id", True),
        "success": ("boolean", True),
    },
    "golden_paths": {"min_applications": ("number", False), "limit": ("number", False)},
    "auto_setup_credentials": {"project_name": ("string", False)},
    "save_credentials": {
        "DATABASE_URL_MEMORY": ("string", False),
        "REDIS_URL": ("string", False),
        "OPENAI_API_KEY": ("string", False),
    },
}


class BadArguments(ValueError):
    """The arguments break the Vector Bridge's own rules; the message names each argument."""


def checked(tool: str, arguments: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """(the arguments the tool uses, the names of those it does not use); BadArguments when the
    original would have refused them."""
    if arguments is None:
        raise BadArguments("arguments: Required")  # the original needed an object, even an empty one
    spec = SPEC[tool]
    problems = []
    for name, (kind, required) in spec.items():
        if name not in arguments:
            if required:
                problems.append(f"{name}: Required")
            continue
        if not _is(kind, arguments[name]):
            problems.append(f"{name}: Expected {kind.replace('id', 'number')}, received {_json_type(arguments[name])}")
    if problems:
        raise BadArguments("; ".join(problems))
    used = {name: value for name, value in arguments.items() if name in spec}
    return used, sorted(name for name in arguments if name not in spec)


def _is(kind: str, value: Any) -> bool:
    if kind == "id":
        return (type(value) is int and value > 0) or (isinstance(value, str) and 0 < len(value) <= 128)
    return any(
        _json_type(value) == one or (one == "number" and _json_type(value) == "integer") for one in kind.split("|")
    )


def _json_type(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def id_text(value: int | str) -> str:
    return str(value)


__all__ = ["SPEC", "BadArguments", "checked", "id_text"]
