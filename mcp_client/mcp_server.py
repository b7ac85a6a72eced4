"""``capsule mcp``: the MCP server on stdio (official ``mcp`` SDK, 2.x ``MCPServer``).

Embedded mode (the default when no URL is set) calls the library on the local store;
remote mode (``--url`` or ``CAPSULE_MEMORY_URL``) proxies every tool to the HTTP API,
signing with SigV4 or sending an API key. The backend is opened once, in the server's
lifespan, and reached by every tool through the request context.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from .bounded import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS
from .options import connection_from, connection_options
from .project_name import client_project, default_project

if TYPE_CHECKING:  # the SDK is imported when a server is built, so other commands start fast
    from mcp.server import MCPServer

    from .backends import Connection
    from .tool_kit import ServerState
    from .tool_sets import Listing

INSTRUCTIONS = """\
Capsule Memory: long-term memory shared across sessions and agents.
- Before a task, memory_search for past decisions, fixes and conventions about it.
- When you learn something another session would need (a decision and why, a fix that worked,
  a pitfall), memory_store it; use memory_feedback on search hits that helped or misled.
- For a recurring error, solution_search finds fixes that worked before; solution_apply records
  whether one worked.
Results are bounded (max_chars); page with cursor or narrow the query when items are omitted;
memory_get reads one memory whole, a page at a time."""

TOOL_MODULES = [
    "mcp_client.memory_tools",
    "mcp_client.learning_tools",
    "mcp_client.capture_tools",
    "mcp_client.governance_tools",
    "mcp_client.vb_tools",
    "mcp_client.capsule_v1_tools",
]


def build_server(open_state: Callable[[], ServerState], listing: Listing | None = None) -> MCPServer:
    """The server, with every tool registered; ``open_state`` runs once at startup; ``listing`` (default:
    :data:`.tool_sets.DEFAULT`) says which tools and arguments ``tools/list`` shows."""
    import importlib

    from mcp.server import MCPServer

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[ServerState]:
        state = open_state()
        try:
            yield state
        finally:
            state.backend.close()

    from .strict_tools import ToolRegistry

    # Registered through our registry, so every tool's arguments are checked the same strict way.
    registry = ToolRegistry()
    for module in TOOL_MODULES:
        importlib.import_module(module).register(registry)
    from capsule import __version__  # the library: not for `capsule mcp --help`

    from .tool_sets import choose, listing_middleware
    from .vb_dialect import beside_content

    return MCPServer(
        "capsule-memory",
        title="Capsule Memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level="WARNING",
        tools=registry.tools,
        middleware=[beside_content, listing_middleware(listing or choose(None))],
    )


def state_opener(conn: Connection, project: str, max_chars: int = DEFAULT_MAX_CHARS) -> Callable[[], ServerState]:
    def open_state() -> ServerState:
        # Never raises for settings a user can fix while it runs: each call then says why.
        from .backends import open_backend
        from .tool_kit import ServerState

        backend = open_backend(conn)
        return ServerState(backend=backend, default_project=project, max_chars=max_chars)

    return open_state


# ---- the command ------------------------------------------------------------------


def _max_chars(value: str) -> int:
    number = int(value)
    if not MIN_MAX_CHARS <= number <= MAX_MAX_CHARS:
        raise argparse.ArgumentTypeError(f"between {MIN_MAX_CHARS} and {MAX_MAX_CHARS}")
    return number


def _listing(value: str) -> Listing:
    from .tool_sets import choose

    try:
        return choose(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_mcp(args: argparse.Namespace) -> None:
    # stdout carries the protocol: every log line goes to stderr.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    project = client_project(args.project) if args.project else default_project()
    from .stdio import claimed_stdio, exit_now, serve

    # Our transport, not the SDK's stdio loop: a hook that closes stdin right after writing
    # still gets every answer, and a call sent without ``initialize`` is answered (COMPAT.md §3.1).
    with claimed_stdio() as wire:  # before the tools load, so nothing they print reaches the wire
        serve(build_server(state_opener(connection_from(args), project, args.max_chars), args.tools), wire)
    exit_now()  # every answer is out and the store closed: the hook is waiting for the exit


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("mcp", help="run the MCP server on stdio (for Claude and other MCP clients)")
    connection_options(p)
    p.add_argument(
        "--project",
        "-p",
        help="default project (default: CAPSULE_PROJECT, else the git repository's or the current folder's name)",
    )
    p.add_argument(
        "--max-chars",
        type=_max_chars,
        default=DEFAULT_MAX_CHARS,
        help=f"default character budget of a tool result (default {DEFAULT_MAX_CHARS})",
    )
    p.add_argument(
        "--tools",
        type=_listing,
        default=os.environ.get("CAPSULE_MCP_TOOLS") or "default",
        help="which tools to list: default (the originals' tools, get, restore, update), all, or a "
        "comma list of sets (memory, learning, capsule-v1, capture, governance, vector-bridge-setup) "
        "and tool names; unlisted tools still answer (env CAPSULE_MCP_TOOLS)",
    )
    p.set_defaults(run=cmd_mcp)


__all__ = ["build_server", "state_opener", "register", "connection_options", "connection_from"]
