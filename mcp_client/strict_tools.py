"""Every MCP tool's arguments checked in one place, before the tool runs.

The SDK builds each tool's arguments model from its signature and lets unknown names
through (pydantic's default ``extra="ignore"``), coerces types (``"yes"`` -> ``True``),
parses strings that look like JSON (``"null"`` -> ``None``) and reports a failure with pydantic's full text. Tools registered through
:class:`ToolRegistry` instead get a model that forbids extras and coerces nothing, and
their arguments are checked before the SDK sees them: Vector Bridge names mapped to ours
(:mod:`.vector_bridge`), an unknown name refused with the nearest known one, and each
failure said in one short line naming the argument. A refused call changes nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import ConfigDict, ValidationError

from . import tool_schema, vb_dialect, vector_bridge
from .tool_kit import state

# Names another interface uses for a different idea, where spelling alone points the wrong way.
HINTS: dict[str, dict[str, str]] = {
    "memory_pin": {"pinned": "action"},  # {"pinned": false} means action "unpin"
}
MAX_ERRORS = 4


class StrictTool(Tool):
    """A tool whose arguments are checked by :func:`checked` before the SDK validates them again."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        if vb_dialect.speaks(self.name, arguments):  # the Vector Bridge's contract: its rules, its answers
            return await vb_dialect.run(self.name, arguments, state(context))
        try:
            arguments = checked(self, arguments)
        except ToolError as exc:
            raise ToolError(f"{self.name}: {exc}") from None  # named like the SDK's own tool errors
        return await super().run(arguments, context, convert_result=convert_result)


class ToolRegistry:
    """Collects the tools (``@registry.tool(...)``, as on ``MCPServer``) for ``MCPServer(tools=...)``."""

    def __init__(self) -> None:
        self.tools: list[Tool] = []

    def tool(self, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.tools.append(strict_tool(fn, **options))
            return fn

        return register


class LiteralMetadata(FuncMetadata):
    """The SDK's argument handling without its JSON guessing: it would parse a string argument that
    looks like JSON (project "null" -> None, the default project), after our check has passed."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return dict(data)


def strict_tool(fn: Callable[..., Any], **options: Any) -> StrictTool:
    # No output schema is built: none is published (below), and building them was most of start-up's
    # tool registration, which a hook's 3 s pays for.
    tool = StrictTool.from_function(fn, structured_output=False, **options)
    loose = tool.fn_metadata
    config = ConfigDict(**{**loose.arg_model.model_config, "extra": "forbid", "strict": True})
    strict = type(
        loose.arg_model.__name__, (loose.arg_model,), {"model_config": config, "__module__": loose.arg_model.__module__}
    )
    # No output schema is published: a client then demands structured content from every answer, and
    # a Vector Bridge caller's answer is the original's one text item; the schemas were also most of
    # tools/list's size, paid for in every conversation. Our answers still carry structured content.
    tool.fn_metadata = LiteralMetadata(
        arg_model=strict, output_schema=None, output_model=None, wrap_output=loose.wrap_output
    )
    tool.parameters = tool_schema.compact(vector_bridge.published(tool.name, strict.model_json_schema(by_alias=True)))
    tool.description = tool_schema.one_line(tool.description)
    tool.annotations = tool_schema.without_defaults(tool.annotations)
    return tool


def argument_names(tool: Tool) -> set[str]:
    return {field.alias or name for name, field in tool.fn_metadata.arg_model.model_fields.items()}


def checked(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` in our names, valid for ``tool``; else a ToolError saying what is wrong."""
    names = argument_names(tool)
    given = {ours: theirs for theirs, ours in vector_bridge.renames(tool.name, names).items() if theirs in arguments}
    try:
        arguments = vector_bridge.translate(tool.name, arguments, names)
    except vector_bridge.Conflict as exc:
        raise ToolError(str(exc)) from None
    unknown = [name for name in arguments if name not in names]
    if unknown:
        known = sorted(names | vector_bridge.renames(tool.name, names).keys())
        raise ToolError("; ".join(unknown_argument(tool.name, name, known) for name in unknown))
    try:
        tool.fn_metadata.arg_model.model_validate(arguments)
    except ValidationError as exc:
        raise ToolError(describe(exc, given)) from None
    return arguments


def unknown_argument(tool: str, name: str, known: list[str]) -> str:
    if not known:
        return f"unknown argument '{name}' ({tool} takes no arguments)"
    return f"unknown argument '{name}' (did you mean '{nearest(tool, name, known)}'?)"


def nearest(tool: str, name: str, known: list[str]) -> str:
    hint = HINTS.get(tool, {}).get(name)
    if hint in known:
        return hint
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5) or _by_prefix(name, known)
    return close[0] if close else max(known, key=lambda k: difflib.SequenceMatcher(None, name, k).ratio())


def _by_prefix(name: str, known: list[str]) -> list[str]:
    """``limit_results`` -> ``limit``: a known name the unknown one starts with, or the reverse."""
    return [k for k in known if name.startswith(k) or k.startswith(name)]


def describe(exc: ValidationError, given: dict[str, str] | None = None) -> str:
    """One short clause per error, naming the argument as it was sent (``given`` maps our names back):
    no pydantic boilerplate, no echoed values, only the type of a value of the wrong type."""
    errors = exc.errors(include_url=False, include_context=False)
    parts = [_clause(error, given or {}) for error in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        parts.append(f"and {len(errors) - MAX_ERRORS} more")
    return "invalid arguments: " + "; ".join(parts)


def _clause(error: Any, given: dict[str, str]) -> str:
    loc = [str(part) for part in error["loc"]]
    if loc:
        loc[0] = given.get(loc[0], loc[0])
    where = ".".join(loc) or "arguments"
    if error["type"] == "missing":
        return f"'{where}' is required"
    got = f" (got {_json_type(error.get('input'))})" if error["type"].endswith("_type") else ""
    return f"'{where}': {error['msg']}{got}"


def _json_type(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


__all__ = ["ToolRegistry", "StrictTool", "strict_tool", "checked", "nearest", "describe"]
