"""The Vector Bridge's tools that have no version of ours: solution_preview, solution_upsert and its
two credential helpers. Registered for tools/list with the original's arguments; every call to
them is answered by :mod:`.vb_dialect` (the bodies here never run)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field

from .strict_tools import ToolRegistry

SolutionId = Annotated[int, Field(description="A solution id from solution_search.")]
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _answered_elsewhere() -> Any:
    raise AssertionError("answered by vb_dialect")


def register(tools: ToolRegistry) -> None:
    @tools.tool(annotations=READ)
    def solution_preview(solution_id: SolutionId, ctx: Context) -> str:
        """Show a solution's steps and checks as they would run, executing nothing."""
        return _answered_elsewhere()

    @tools.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False))
    def solution_upsert(
        title: str,
        description: str,
        category: Annotated[
            str,
            Field(
                description="devops, deploy, workspace, tsconfig, migration, build, runtime, "
                "test, security or performance"
            ),
        ],
        signatures: Annotated[list[dict[str, Any]], Field(description="[{text, regexes?, meta?}]: the error texts")],
        steps: Annotated[
            list[dict[str, Any]],
            Field(description=("[{step_order, kind: cmd|patch|copy|script|env, payload, description?, timeout_ms?}]")),
        ],
        ctx: Context,
        component: str | None = None,
        tags: list[str] | None = None,
        project_root: str | None = None,
        package_manager: str | None = None,
        monorepo_tool: str | None = None,
        checks: Annotated[
            list[dict[str, Any]] | None,
            Field(description=("[{check_order, cmd, expect_substring?, expect_exit_code?, timeout_ms?}]")),
        ] = None,
    ) -> str:
        """Save a fix that worked as a new solution (error signatures, ordered steps, checks)."""
        return _answered_elsewhere()

    @tools.tool(annotations=READ)
    def auto_setup_credentials(ctx: Context, project_name: str = "ai-memory") -> str:
        """Kept for the Vector Bridge's callers: checks the memory's set-up. Capsule Memory needs no database,
        Redis or OpenAI credentials, so this only reports that it is ready."""
        return _answered_elsewhere()

    @tools.tool(annotations=READ)
    def save_credentials(
        ctx: Context,
        DATABASE_URL_MEMORY: str | None = None,
        REDIS_URL: str | None = None,
        OPENAI_API_KEY: str | None = None,
    ) -> str:
        """Kept for the Vector Bridge's callers, who saved database, Redis and OpenAI credentials with it:
        Capsule Memory needs none of them, so nothing is written."""
        return _answered_elsewhere()


__all__ = ["register"]
