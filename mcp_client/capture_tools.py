"""The capture tools: memory_capture, memory_candidates, memory_approve, memory_reject."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from capsule.capture import models as cm
from capsule.core import limits

from .capture_ops import capture_ops
from .strict_tools import ToolRegistry
from .tool_kit import Project, Tags, drop_none, result, run, state

CandidateId = Annotated[
    str, Field(min_length=1, max_length=64, description="A candidate id from memory_capture or memory_candidates.")
]
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


def _lines(candidates: list[cm.Candidate]) -> str:
    return "\n".join(f"- {c.id} [{c.type} {c.score:.2f} {c.status}] {c.text[:160]}" for c in candidates)


def register(tools: ToolRegistry) -> None:
    @tools.tool(annotations=WRITE)
    def memory_capture(
        events: Annotated[
            list[cm.CaptureEvent],
            Field(
                min_length=1,
                max_length=cm.MAX_EVENTS,
                description=(
                    "Conversation events in order: role (user|assistant|tool|system), text, and optionally time "
                    "(ISO 8601), session and tool_results."
                ),
            ),
        ],
        ctx: Context,
        project: Project = None,
        auto_approve: Annotated[
            bool,
            Field(
                description="Store at once the candidates at or above the project's "
                "threshold; the rest wait for approval."
            ),
        ] = False,
    ) -> Annotated[CallToolResult, cm.CaptureResult]:
        """Propose memories from a conversation: decisions, fixes that worked, causes of errors, dead ends,
        conventions, preferences. Each candidate has a score and the reason; they wait as pending for
        memory_approve or memory_reject. Nothing already queued, rejected or stored is proposed again."""
        s = state(ctx)
        request = {
            "project": s.project(project),
            "events": [e.model_dump(mode="json", exclude_unset=True) for e in events],
            "auto_approve": auto_approve,
        }
        found = run(lambda: capture_ops(s.backend).capture(request))
        return result(found, found.explanation + ("\n" + _lines(found.candidates) if found.candidates else ""))

    @tools.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def memory_candidates(
        ctx: Context,
        project: Project = None,
        status: Annotated[
            Literal["pending", "approved", "rejected"], Field(description="Which candidates.")
        ] = "pending",
        limit: Annotated[int, Field(ge=1, le=200, description="How many, newest first.")] = 50,
        cursor: Annotated[str | None, Field(max_length=100, description="next_cursor of the page before.")] = None,
    ) -> Annotated[CallToolResult, cm.CandidateList]:
        """List the capture queue: candidates waiting for approval (or those approved or rejected)."""
        s = state(ctx)
        found = run(
            lambda: capture_ops(s.backend).candidates(
                project=s.project(project), status=status, cursor=cursor, limit=limit
            )
        )
        return result(found, found.explanation + ("\n" + _lines(found.candidates) if found.candidates else ""))

    @tools.tool(annotations=WRITE)
    def memory_approve(
        id: CandidateId,
        ctx: Context,
        text: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=limits.MAX_CONTENT_BYTES,
                description="The memory's text, edited (default: the candidate's).",
            ),
        ] = None,
        tags: Tags = None,
        type: Annotated[str | None, Field(max_length=64, description="Another class than the proposed one.")] = None,
        pinned: Annotated[bool, Field(description="Pin the memory so the rolling limit never evicts it.")] = False,
    ) -> Annotated[CallToolResult, cm.DecisionResult]:
        """Approve a capture candidate: it is stored as a memory (with your edits). Approving twice is refused."""
        s = state(ctx)
        request = {**drop_none(text=text, tags=tags, type=type), "pinned": pinned}
        done = run(lambda: capture_ops(s.backend).approve(id, request))
        return result(done, done.explanation)

    @tools.tool(annotations=WRITE)
    def memory_reject(
        id: CandidateId,
        ctx: Context,
        reason: Annotated[str | None, Field(max_length=limits.MAX_EXPLANATION_CHARS, description="Why not.")] = None,
    ) -> Annotated[CallToolResult, cm.DecisionResult]:
        """Reject a capture candidate: it is not stored, and the same text is never proposed again
        for this project (use it for chatter, dead ends and facts that are wrong)."""
        s = state(ctx)
        done = run(lambda: capture_ops(s.backend).reject(id, drop_none(reason=reason)))
        return result(done, done.explanation)


__all__ = ["register"]
