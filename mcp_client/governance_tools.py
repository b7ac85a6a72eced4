"""The governance tools: memory_update (content, tags, class, expiry; the earlier version kept),
memory_history and memory_revert."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from capsule.core import limits
from capsule.core.models import RetentionClass
from capsule.governance import models as gm

from .strict_tools import ToolRegistry
from .tool_kit import MemoryId, Tags, drop_none, result, run, state

RetentionArg = Annotated[
    RetentionClass | None,
    Field(
        description=(
            "irreplaceable (never evicted; forget needs force), permanent (never evicted), replaceable (evicted oldest "
            "first), ephemeral (expires after ttl), auto (pinned: irreplaceable, else replaceable)."
        )
    ),
]
TtlArg = Annotated[
    int | None,
    Field(
        ge=1, le=limits.MAX_TTL_SECONDS, description=("Seconds until an ephemeral memory expires (1 s to 10 years).")
    ),
]
IfMatchArg = Annotated[
    str | None,
    Field(
        pattern=gm.IF_MATCH_PATTERN,
        description=("The memory's sha256 as you last read it: refused if it changed since (someone else updated it)."),
    ),
]
Reason = Annotated[
    str | None,
    Field(
        max_length=limits.MAX_EXPLANATION_CHARS, description="Why it changed (kept in its history and the audit log)."
    ),
]
CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


def register(tools: ToolRegistry) -> None:
    @tools.tool(annotations=CHANGE)
    def memory_update(
        id: MemoryId,
        ctx: Context,
        content: Annotated[
            str | None,
            Field(min_length=1, max_length=limits.MAX_CONTENT_BYTES, description="The corrected text (re-embedded)."),
        ] = None,
        tags: Tags = None,
        retention: RetentionArg = None,
        ttl: TtlArg = None,
        reason: Reason = None,
        if_match: IfMatchArg = None,
        visibility: Annotated[
            Literal["private", "shared", "public"] | None,
            Field(
                description=("Who in the tenant may read it (a memory with flagged personal data cannot be public).")
            ),
        ] = None,
        subject: Annotated[
            str | None, Field(min_length=1, max_length=256, description=("The person or end-user it is about."))
        ] = None,
    ) -> Annotated[CallToolResult, gm.UpdateResult]:
        """Correct a memory in place instead of storing a contradicting one; earlier versions are kept
        (memory_history)."""
        s = state(ctx)
        request = drop_none(
            content=content,
            tags=tags,
            retention=retention,
            ttl=ttl,
            reason=reason,
            visibility=visibility,
            subject=subject,
        )
        updated = run(lambda: s.backend.update(id, request, if_match))
        return result(updated, updated.explanation)

    @tools.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def memory_history(id: MemoryId, ctx: Context) -> Annotated[CallToolResult, gm.HistoryResult]:
        """Every version of a memory, oldest first, with who changed it, when and why. Use it before
        memory_revert to find the version number to bring back. Returns the versions and the memory."""
        s = state(ctx)
        found = run(lambda: s.backend.history(id))
        lines = [f"{v.version}{' (current)' if v.current else ''}: {v.content[:200]}" for v in found.versions]
        return result(found, "\n".join([*lines, found.explanation]))

    @tools.tool(annotations=CHANGE)
    def memory_revert(
        id: MemoryId,
        version: Annotated[int, Field(ge=1, le=10**9, description="The version number memory_history lists.")],
        ctx: Context,
        reason: Reason = None,
        if_match: IfMatchArg = None,
    ) -> Annotated[CallToolResult, gm.UpdateResult]:
        """Bring back an earlier version of a memory after a wrong update (the current one is kept in its
        history too, so a revert can be reverted). Returns the memory and its new version number."""
        s = state(ctx)
        reverted = run(lambda: s.backend.revert(id, drop_none(version=version, reason=reason), if_match))
        return result(reverted, reverted.explanation)


__all__ = ["register"]
