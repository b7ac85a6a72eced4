"""What every tool shares: the server state from the lifespan, the common parameter types,
and turning our errors into MCP tool errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from capsule.core import limits
from capsule.core.errors import CapsuleError

from .backends import Backend
from .bounded import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS

R = TypeVar("R")


@dataclass
class ServerState:
    """Built once by the server's lifespan; every tool call reads it from the context."""

    backend: Backend
    default_project: str
    max_chars: int = DEFAULT_MAX_CHARS

    def project(self, given: str | None) -> str:
        from .project_name import client_project  # a path named on this machine: canonical here

        return client_project(given) if given else self.default_project

    def budget(self, given: int | None) -> int:
        return given or self.max_chars


def state(ctx: Context) -> ServerState:
    return ctx.request_context.lifespan_context


# ---- parameter types shared by several tools -----------------------------------

Project = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=limits.MAX_PROJECT_CHARS,
        description="Project (its path or name); default: the current one.",
    ),
]
MemoryId = Annotated[str, Field(min_length=1, max_length=128, description="A memory's id.")]
MaxChars = Annotated[
    int | None,
    Field(
        ge=MIN_MAX_CHARS,
        le=MAX_MAX_CHARS,
        description=f"Character budget for the result (default {DEFAULT_MAX_CHARS}); items beyond it are left out "
        "and counted in 'omitted'.",
    ),
]
Meta = Annotated[dict[str, Any] | None, Field(description="More metadata (language, agent, keys of your own).")]
Tags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=limits.MAX_TAG_CHARS)]] | None,
    Field(max_length=limits.MAX_TAGS, description="e.g. ['sqlite', 'migrations']"),
]


def run(call: Callable[[], R]) -> R:
    """Run a backend call; our errors become tool errors the agent can read and act on."""
    try:
        return call()
    except CapsuleError as exc:
        raise ToolError(describe_error(exc)) from exc


def describe_error(exc: CapsuleError) -> str:
    text = f"{exc.code}: {exc.message}"
    details = exc.details if isinstance(exc.details, list) else []
    more = [f"{d.get('field')}: {d.get('message')}" for d in details[1:4] if isinstance(d, dict)]
    if more:
        text += " Also: " + "; ".join(more)
    return text


def result(structured: BaseModel, text: str) -> CallToolResult:
    """The tool result: a short text for the agent and the structured result for programs."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured.model_dump(mode="json", by_alias=True),
    )


def merged_meta(meta: dict[str, Any] | None, **flat: Any) -> dict[str, Any]:
    """``meta`` with the tool's own metadata arguments added; the same key given twice must agree."""
    merged = dict(meta or {})
    for key, value in drop_none(**flat).items():
        if key in merged and merged[key] != value:
            raise ToolError(f"meta.{key} and the argument for it differ ({merged[key]!r}, {value!r}): give one")
        merged[key] = value
    return merged


def drop_none(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v not in (None, [], {})}


__all__ = [
    "ServerState",
    "state",
    "Project",
    "MemoryId",
    "MaxChars",
    "Tags",
    "Meta",
    "run",
    "result",
    "drop_none",
    "merged_meta",
    "describe_error",
]
