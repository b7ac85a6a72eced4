"""The first Capsule Memory's five MCP tools, under their own dotted names (COMPAT §4.1).

Its bridge registered ``capsule-memory.store``, ``.search``, ``.list``, ``.pin`` and ``.forget``
with a text item and ``structuredContent`` of its own shapes (camelCase ``createdAt``,
``forgottenMemoryId``). It had no projects: these tools work on the server's default project,
whose rolling limit (100 by default, oldest unpinned evicted first) is the first Capsule's own.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from capsule.core import limits, models

from .strict_tools import ToolRegistry
from .tool_kit import run, state

PREFIX = "capsule-memory."
Id = Annotated[str, Field(min_length=1, max_length=128, description="The memory's id.")]


def _answer(structured: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _iso(at: datetime | None) -> str | None:
    """As the first Capsule sent dates: ISO-8601 UTC with milliseconds and a Z."""
    if at is None:
        return None
    utc = at.astimezone(UTC) if at.tzinfo else at
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _summary(item: dict[str, Any]) -> str:
    created = item.get("createdAt") or "unknown date"
    return ("📌 " if item["pinned"] else "") + item["content"] + f"\n  • id: {item['id']}\n  • created: {created}"


def _item(memory: models.Memory | models.SearchHit) -> dict[str, Any]:
    created = getattr(memory, "created_at", None)
    return {"id": memory.id, "content": memory.content, "pinned": memory.pinned, "createdAt": _iso(created)}


def register(tools: ToolRegistry) -> None:
    @tools.tool(name=PREFIX + "store", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    def store(
        content: Annotated[
            str, Field(min_length=1, max_length=limits.MAX_CONTENT_BYTES, description="What to remember.")
        ],
        ctx: Context,
        pinned: Annotated[bool, Field(description="Pin it so it is never auto-forgotten.")] = False,
    ) -> CallToolResult:
        """The first Capsule Memory's store: remember one thing in the default project (its rolling limit
        forgets the oldest unpinned memory when full, and says which)."""
        s = state(ctx)
        stored = run(
            lambda: s.backend.store(
                {
                    "project": s.default_project,
                    "content": content,
                    "pinned": pinned,
                    "meta": {"source": "capsule-memory"},
                }
            )
        )
        forgotten = stored.evicted[0] if stored.evicted else None
        explanation = stored.explanation
        text = f"Saved memory {stored.memory.id} ({'pinned' if pinned else 'unpinned'}).\n{explanation}"
        if forgotten:
            text += f"\nAuto-forgot memory {forgotten}."
        return _answer(
            {
                "id": stored.memory.id,
                "pinned": stored.memory.pinned,
                "explanation": explanation,
                "forgottenMemoryId": forgotten,
            },
            text,
        )

    @tools.tool(name=PREFIX + "search", annotations=ToolAnnotations(read_only_hint=True))
    def search(
        query: Annotated[str, Field(min_length=1, max_length=limits.MAX_QUERY_CHARS)],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=20, description="How many results (default 10).")] = 10,
    ) -> CallToolResult:
        """The first Capsule Memory's search: memories of the default project by meaning, best first."""
        s = state(ctx)
        found = run(lambda: s.backend.search({"project": s.default_project, "query": query, "k": limit}))
        results = [{**_item(hit), "score": round(hit.score, 6)} for hit in found.results]
        explanation = f"Found {len(results)} memory item(s) using semantic similarity."
        lines = [explanation, ""] + [
            f"{i}. {_summary(r)} (score: {r['score']:.3f})" for i, r in enumerate(results, start=1)
        ]
        return _answer({"query": query, "explanation": explanation, "results": results}, "\n".join(lines))

    @tools.tool(name=PREFIX + "list", annotations=ToolAnnotations(read_only_hint=True))
    def list_(
        ctx: Context, limit: Annotated[int, Field(ge=1, le=100, description="How many (default 50).")] = 50
    ) -> CallToolResult:
        """The first Capsule Memory's list: the default project's memories, pinned first, then newest."""
        s = state(ctx)
        items: list[dict[str, Any]] = []
        cursor = None
        while len(items) < limit:  # our pages hold at most MAX_PAGE
            request = {
                "project": s.default_project,
                "limit": min(limit - len(items), limits.MAX_PAGE),
                **({"cursor": cursor} if cursor else {}),
            }
            page = run(lambda request=request: s.backend.list_memories(request))
            items += [_item(m) for m in page.memories]
            cursor = page.next_cursor
            if not cursor:
                break
        items.sort(key=lambda item: not item["pinned"])  # stable: newest first within each
        explanation = f"Loaded {len(items)} most recent memories."
        lines = [explanation, ""] + [f"{i}. {_summary(item)}" for i, item in enumerate(items, start=1)]
        return _answer({"explanation": explanation, "items": items}, "\n".join(lines))

    @tools.tool(name=PREFIX + "pin", annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True))
    def pin(
        id: Id, ctx: Context, pin: Annotated[bool, Field(description="true pins (the default), false unpins.")] = True
    ) -> CallToolResult:
        """The first Capsule Memory's pin: pin a memory (never auto-forgotten), or unpin it with pin=false."""
        s = state(ctx)
        done = run(lambda: s.backend.pin(id, pin))
        explanation = "Memory pinned." if done.memory.pinned else "Memory unpinned."
        return _answer(
            {"success": True, "pinned": done.memory.pinned, "explanation": explanation},
            f"{explanation} (pinned = {'true' if done.memory.pinned else 'false'})",
        )

    @tools.tool(name=PREFIX + "forget", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    def forget(
        id: Id,
        ctx: Context,
        reason: Annotated[str | None, Field(min_length=1, max_length=limits.MAX_EXPLANATION_CHARS)] = None,
    ) -> CallToolResult:
        """The first Capsule Memory's forget: forget a memory (recoverable for 30 days with memory_restore)."""
        s = state(ctx)
        run(lambda: s.backend.forget(id, reason))
        explanation = f"Memory forgotten: {reason}" if reason else "Memory forgotten."
        return _answer({"success": True, "explanation": explanation}, explanation)


__all__ = ["register", "PREFIX"]
