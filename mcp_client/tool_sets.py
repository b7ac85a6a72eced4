"""Which tools ``tools/list`` shows: a client pays for every listed definition in every conversation.

The default set is the originals' tools (the Vector Bridge's memory and learning tools, the first
Capsule's store/search/list/pin/forget) plus get, restore and update, each listed with the
arguments most calls need. ``capsule mcp --tools all`` (or ``CAPSULE_MCP_TOOLS``) lists every tool
with every argument; a comma list of set names or tool names chooses. A tool or argument that is
not listed still works when called: listing is a budget, not a permission.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

SETS: dict[str, tuple[str, ...]] = {
    "memory": (
        "memory_store",
        "memory_ingest",
        "memory_search",
        "memory_list",
        "memory_get",
        "memory_pin",
        "memory_forget",
        "memory_restore",
        "memory_update",
        "memory_feedback",
        "memory_projects",
    ),
    "learning": (
        "solution_search",
        "solution_preview",
        "solution_apply",
        "solution_upsert",
        "pattern_detect",
        "pattern_solutions",
        "pattern_link",
        "golden_paths",
        "detect_patterns",
    ),
    "capsule-v1": (
        "capsule-memory.store",
        "capsule-memory.search",
        "capsule-memory.list",
        "capsule-memory.pin",
        "capsule-memory.forget",
    ),
    "capture": ("memory_capture", "memory_candidates", "memory_approve", "memory_reject"),
    "governance": ("memory_history", "memory_revert"),
    "vector-bridge-setup": ("auto_setup_credentials", "save_credentials"),
}
DEFAULT = ("memory", "learning", "capsule-v1")
ALL = "all"
# Arguments the default listing leaves out (governance, paging budgets, time travel): they still work.
ADVANCED: dict[str, frozenset[str]] = {
    name: frozenset(args)
    for name, args in {
        "memory_store": (
            "retention",
            "ttl",
            "supersedes",
            "visibility",
            "subject",
            "explanation",
            "component",
            "category",
        ),
        "memory_ingest": ("component", "category"),
        "memory_search": (
            "mode",
            "path_prefix",
            "max_chars",
            "as_of",
            "min_relevance",
            "retention",
            "include_superseded",
            "visibility",
            "subject",
            "component",
            "category",
        ),
        "memory_list": ("max_chars", "retention", "visibility", "subject"),
        "memory_update": ("retention", "ttl", "visibility", "subject", "if_match"),
        "memory_forget": ("force",),
        "memory_get": ("max_chars",),
        "memory_projects": ("max_chars",),
        "solution_search": ("max_chars", "component"),
        "solution_apply": ("error", "context", "pattern_category", "project"),
        "pattern_detect": ("max_chars", "min_score", "solutions", "category"),
        "pattern_solutions": ("max_chars",),
        "pattern_link": ("context",),
        "golden_paths": ("max_chars", "category"),
        "detect_patterns": ("max_chars",),
    }.items()
}


class Listing:
    """The tools ``tools/list`` shows, and whether their advanced arguments are shown too."""

    def __init__(self, tools: Iterable[str] | None, advanced: bool) -> None:
        self.tools = None if tools is None else frozenset(tools)
        self.advanced = advanced

    def shows(self, tool: dict[str, Any]) -> bool:
        return self.tools is None or tool.get("name") in self.tools

    def shown(self, tool: dict[str, Any]) -> dict[str, Any]:
        hidden = set() if self.advanced else ADVANCED.get(tool.get("name", ""), frozenset())
        schema = tool.get("inputSchema")
        if not hidden or not isinstance(schema, dict):
            return tool
        properties = {k: v for k, v in schema.get("properties", {}).items() if k not in hidden}
        return {**tool, "inputSchema": {**schema, "properties": properties}}


def choose(value: str | None) -> Listing:
    """The listing a ``--tools`` value names: ``default`` (or nothing), ``all``, or a comma list of set
    and tool names (a list shows its tools with every argument). ValueError names an unknown entry."""
    words = [word.strip() for word in (value or "default").split(",") if word.strip()]
    if words == [ALL]:
        return Listing(None, advanced=True)
    if words == ["default"]:
        return Listing([name for key in DEFAULT for name in SETS[key]], advanced=False)
    every = {name for names in SETS.values() for name in names}
    tools: list[str] = []
    for word in words:
        if word in SETS:
            tools += SETS[word]
        elif word in every:
            tools.append(word)
        elif word == "default":
            tools += [name for key in DEFAULT for name in SETS[key]]
        else:
            raise ValueError(f"unknown tool set or tool '{word}' (sets: {', '.join(['all', 'default', *SETS])})")
    return Listing(tools, advanced=True)


def listing_middleware(listing: Listing) -> Callable[[Any, Callable[[Any], Awaitable[Any]]], Awaitable[Any]]:
    """Server middleware that shapes ``tools/list``'s answer to ``listing``."""

    async def middleware(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await call_next(ctx)
        if ctx.method != "tools/list" or not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return result
        return {**result, "tools": [listing.shown(tool) for tool in result["tools"] if listing.shows(tool)]}

    return middleware


__all__ = ["SETS", "DEFAULT", "ADVANCED", "Listing", "choose", "listing_middleware"]
