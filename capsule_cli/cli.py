"""The ``capsule`` command: the composition root that wires settings, store, embedder and
service, and that nothing else imports.

Memory commands (store, search, list, get, pin, unpin, forget, restore, feedback, projects,
limit) ask the running ``capsule serve`` of the same data folder first
(:mod:`mcp_client.local_server`), which has the library loaded, and call the library directly
on the embedded store when none answers; so do the other commands the HTTP API serves (capture,
governance, solutions, export, import: :func:`served`, :func:`served_pages`). Other command groups
(serve, keys, mcp, hook, install, jobs, solutions, bench, eval) live in their own modules and
register themselves through :data:`COMMAND_MODULES`. Start-up time is the hooks' and the
commands' main cost, so heavy modules load where they are used: a command line names the one
module it needs (:data:`COMMAND_INDEX`), and ``capsule --help`` lists every command from that
index without importing any of them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from capsule.core import errors
from capsule.core.embedder_names import EMBEDDER_NAMES
from capsule.core.errors import CapsuleError
from mcp_client import local_server, project_name

from . import render
from .strict_cli import HINT, StrictParser

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, datetime and logging are start-up costs the warm route does not pay
    from collections.abc import Callable, Iterator
    from datetime import datetime
    from typing import Any

    from capsule import MemoryService, Settings

LOCAL_TENANT = "local"

# Modules with a ``register(subparsers)`` function adding their commands.
COMMAND_MODULES: list[str] = [
    "capsule_cli.serve",
    "capsule_cli.keys",
    "capsule_cli.loadtest",
    "capsule_cli.cloud",
    "capsule_cli.bench",
    "capsule_cli.evaluate",
    "capsule_cli.jobs_cmd",
    "capsule_cli.solutions_cmd",
    "capsule_cli.patterns_cmd",
    "mcp_client.mcp_server",
    "mcp_client.hooks",
    "capsule_cli.install",
    "capsule_cli.tenants_cmd",
    "capsule_cli.transfer_cmd",
    "capsule_cli.capture_cmd",
    "capsule_cli.sync_cmd",
    "capsule_cli.governance_cmd",
]
# Every command a module above adds: its module and its one-line help. A command line naming one
# imports that module alone; ``capsule --help`` (and a mistyped command) lists them from here,
# importing none. tests/cli/test_cli_start.py checks it against what the modules register.
COMMAND_INDEX: dict[str, tuple[str, str]] = {
    "serve": ("capsule_cli.serve", "run the HTTP API and the web console on this machine"),
    "keys": ("capsule_cli.keys", "API keys and SigV4 access keys for capsule serve"),
    "loadtest": ("capsule_cli.loadtest", "measure capsule serve: requests/s and latency for store and search"),
    "cloud": ("capsule_cli.cloud", "one-off steps for the AWS deployment"),
    "bench": ("capsule_cli.bench", "measure ingest, cold/warm search and recall against other methods"),
    "eval": ("capsule_cli.evaluate", "retrieval benchmarks through the real service"),
    "jobs": ("capsule_cli.jobs_cmd", "run the scheduled jobs (retention, mining, backfill, redact) now"),
    "solutions": ("capsule_cli.solutions_cmd", "solutions (fixpacks): import, list, show, search, delete"),
    "patterns": ("capsule_cli.patterns_cmd", "recurring error patterns: mine, detect, golden paths"),
    "mcp": ("mcp_client.mcp_server", "run the MCP server on stdio (for Claude and other MCP clients)"),
    "hook": ("mcp_client.hooks", "Claude Code hook commands (read the hook JSON on stdin; never block)"),
    "install": ("capsule_cli.install", "connect Claude Desktop or Claude Code to Capsule Memory"),
    "tenants": ("capsule_cli.tenants_cmd", "tenant maintenance (hosted deployments)"),
    "export": ("capsule_cli.transfer_cmd", "write the local store's data as JSON Lines (lossless)"),
    "import": ("capsule_cli.transfer_cmd", "import an export file (or -), or: vector-bridge URI, capsule-mongo URI"),
    "capture": ("capsule_cli.capture_cmd", "propose memories from conversation events (JSON or JSON Lines, or -)"),
    "candidates": ("capsule_cli.capture_cmd", "the capture queue (pending by default), newest first"),
    "approve": ("capsule_cli.capture_cmd", "approve a capture candidate (optionally edited): store it as a memory"),
    "reject": ("capsule_cli.capture_cmd", "reject a capture candidate: never proposed again"),
    "capture-threshold": ("capsule_cli.capture_cmd", "set the project's auto-approve threshold (0-1)"),
    "sync": ("capsule_cli.sync_cmd", "sync the local store with a remote capsule serve or hosted tenant"),
    "update": ("capsule_cli.governance_cmd", "change a memory in place (the earlier version is kept)"),
    "history": ("capsule_cli.governance_cmd", "every version of a memory, oldest first"),
    "revert": ("capsule_cli.governance_cmd", "bring back an earlier version of a memory"),
}


def default_project() -> str:
    return project_name.default_project()


def settings_from(args: argparse.Namespace) -> Settings:
    from capsule import Settings

    return Settings.from_env(data_dir=getattr(args, "data_dir", None), embedder=getattr(args, "embedder", None))


def service_from(args: argparse.Namespace) -> MemoryService:
    import logging

    from capsule.runtime.service import build_service

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return build_service(settings_from(args))


def _server(args: argparse.Namespace) -> local_server.LocalServer | None:
    return local_server.find(
        os.environ, data_dir=getattr(args, "data_dir", None), embedder=getattr(args, "embedder", None)
    )


def served(
    args: argparse.Namespace,
    route: str,
    body: Any = None,
    *,
    memory_id: str | None = None,
    query: dict[str, Any] | None = None,
    path: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
    content_type: str = "application/json",
) -> Any:
    """The running ``capsule serve``'s answer for this data folder, or None: run embedded.

    ``memory_id`` (the id as typed: whole, or the first characters a table shows) goes into the
    route's path once this data folder's store names one memory by it; otherwise None, and the
    embedded run resolves it with its own errors (capsule.core.idprefix). ``path`` gives other path
    parameters as they are (a solution's id). A body over the HTTP edge's size limit (413) runs
    embedded too: the limit is the edge's, nothing was done, and the library applies its own.
    ``raw`` is a body sent as it is, declared as ``content_type``, instead of ``body`` as JSON
    (``capsule import``'s JSON Lines)."""
    server = _server(args)
    if server is None:
        return None
    params = dict(path) if path else None
    if memory_id is not None:
        whole = local_server.short_id(
            os.environ, memory_id, data_dir=getattr(args, "data_dir", None), tenant=LOCAL_TENANT
        )
        if whole is None:
            return None
        params = {**(params or {}), "id": whole}
    try:
        return server.call(
            route, body, path_params=params, query=query, headers=headers, raw=raw, content_type=content_type
        )
    except (local_server.NotAnswering, errors.PayloadTooLarge):
        return None


def served_pages(
    args: argparse.Namespace, route: str, query: dict[str, Any], *, next_header: str, accept: str
) -> Iterator[bytes] | None:
    """The running server's paged text answer (``capsule export``), page by page as each arrives,
    or None: run embedded. The first page is asked for here, so None still means nothing was
    written; a server that stops answering after it is an error (Unavailable), not a fallback."""
    server = _server(args)
    if server is None:
        return None
    try:
        first, cursor = server.page(route, query=query, next_header=next_header, accept=accept)
    except local_server.NotAnswering:
        return None

    def pages(body: bytes, cursor: str | None) -> Iterator[bytes]:
        yield body
        while cursor:
            try:
                body, cursor = server.page(
                    route, query={**query, "cursor": cursor}, next_header=next_header, accept=accept
                )
            except local_server.NotAnswering as exc:
                raise errors.Unavailable(f"the capsule serve stopped answering in the middle: {exc}") from exc
            yield body

    return pages(first, cursor)


def _when(value: Any) -> str:
    """A time as the tables show it, to the minute: a datetime (embedded run) or ISO text (the
    server's JSON) alike."""
    if not value:
        return ""
    if isinstance(value, str):
        return value[:16].replace("T", " ")
    return value.strftime("%Y-%m-%d %H:%M")


def _meta(args: argparse.Namespace) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for item in getattr(args, "meta", None) or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise CapsuleError(f"--meta takes KEY=VALUE, got {item!r}")
        meta[key] = value
    for name in ("type", "component", "category", "outcome", "author"):
        value = getattr(args, name, None)
        if value:
            meta["outcome_status" if name == "outcome" else name] = value
    if getattr(args, "tag", None):
        meta["tags"] = args.tag
    return meta


def _out(args: argparse.Namespace, result: Any, text: Callable[[], str]) -> None:
    print(render.as_json(result) if args.json else text())


# ---- commands ------------------------------------------------------------


def cmd_store(args: argparse.Namespace) -> None:
    content = sys.stdin.read() if args.content == "-" else args.content
    request = {
        "project": args.project,
        "content": content,
        "pinned": args.pin,
        "path": args.path,
        "explanation": args.explanation,
        "meta": _meta(args),
        "occurred_at": args.occurred_at,
        **_governed(args),
    }
    result = served(args, "store", request)
    if result is None:
        result = service_from(args).store_memory(LOCAL_TENANT, request)
    _out(args, result, lambda: f"{result.memory.id}\n{result.explanation}")


def _governed(args: argparse.Namespace) -> dict[str, Any]:
    """The governance options a command was given (capsule.governance), left out when not."""
    fields = retention_fields(args)
    if getattr(args, "supersedes", None):
        fields["supersedes"] = args.supersedes
    return fields


def cmd_ingest(args: argparse.Namespace) -> None:
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:  # before anything is stored: a typo must not look like an empty folder
        raise CapsuleError(f"no such file or folder: {', '.join(missing)}; nothing was ingested")
    from .files import ingestible

    service = None  # opened on the first file the running server (if any) does not take
    candidates = list(ingestible([Path(p) for p in args.paths]))
    summary = {"files": 0, "chunks": 0, "stored": 0, "deduplicated": 0, "skipped": [], "evicted": 0}
    from .progress import Progress

    # Piped, a line every few seconds: the first ingest loads the model (half a minute) before its first file.
    bar = Progress("ingest (files)", len(candidates), piped="lines")
    for path, skip in candidates:
        bar.advance()
        if skip:
            summary["skipped"].append({"path": str(path), "reason": skip})
            continue
        request = {
            "project": args.project,
            "text": path.read_text("utf-8", "replace"),
            "path": str(path),
            "meta": _meta(args),
        }
        result = served(args, "ingest", request) if service is None else None
        if result is None:
            if service is None:
                bar.note("opening the store and the embedder (the first run loads the model)")
                service = service_from(args)
            result = service.ingest(LOCAL_TENANT, request)
        summary["files"] += 1
        summary["chunks"] += result.chunks
        summary["deduplicated"] += len(result.deduplicated)
        summary["stored"] += result.chunks - len(result.deduplicated)
        summary["evicted"] += len(result.evicted)
    bar.close()
    _out(
        args,
        summary,
        lambda: (
            f"ingested {summary['files']} files: {summary['chunks']} chunks, {summary['stored']} stored, "
            f"{summary['deduplicated']} already stored, {len(summary['skipped'])} skipped, "
            f"{summary['evicted']} evicted by the rolling limit"
        ),
    )


def cmd_search(args: argparse.Namespace) -> None:
    filters = {
        "component": args.component,
        "category": args.category,
        "tags": args.tag or [],
        "path_prefix": args.path_prefix,
        "since": args.since,
        "until": args.until,
        "retention": args.retention,
        "visibility": args.visibility,
        "subject": args.subject,
    }
    request = {
        "query": args.query,
        "k": args.k,
        "mode": args.mode,
        "global": args.all_projects,
        "filters": {k: v for k, v in filters.items() if v},
    }
    if args.as_of:
        request["as_of"] = args.as_of
    if args.min_relevance is not None:
        request["min_relevance"] = args.min_relevance
    if args.include_superseded:
        request["include_superseded"] = True
    if not args.all_projects:
        request["project"] = args.project
    result = served(args, "search", request)
    if result is None:
        result = service_from(args).search(LOCAL_TENANT, request)
    _out(
        args,
        result,
        lambda: "\n".join(
            [
                render.table(
                    ["id", "score", "vec", "bm25", "time", "fb", "content"],
                    [
                        (
                            h.id[:12],
                            f"{h.score:.3f}",
                            f"{h.components.vector:.2f}",
                            f"{h.components.bm25:.2f}",
                            f"{h.components.time:.2f}",
                            f"{h.components.feedback:.2f}",
                            h.content,
                        )
                        for h in result.results
                    ],
                    wide="content",
                ),
                result.explanation,
            ]
        ),
    )


def _memory_rows(memories) -> list[tuple]:  # the id's 12 characters, as search shows (--json: whole)
    return [(m.id[:12], "yes" if m.pinned else "", _when(m.created_at), m.content) for m in memories]


def cmd_list(args: argparse.Namespace) -> None:
    request = {
        "project": args.project,
        "pinned_only": args.pinned,
        "limit": args.limit,
        "cursor": args.cursor,
        **{
            k: v
            for k, v in (("retention", args.retention), ("visibility", args.visibility), ("subject", args.subject))
            if v
        },
    }
    result = served(args, "list", query=request)
    if result is None:
        result = service_from(args).list_memories(LOCAL_TENANT, request)
    _out(
        args,
        result,
        lambda: "\n".join(
            [
                render.table(["id", "pinned", "created", "content"], _memory_rows(result.memories), wide="content"),
                result.explanation,
            ]
            + ([f"next: --cursor {result.next_cursor}"] if result.next_cursor else [])
        ),
    )


def _served_memory(args: argparse.Namespace, operation: str) -> Any:
    """The running server's answer for a one-memory command, or None (run embedded)."""
    if operation == "forget":
        return served(args, "forget", memory_id=args.id, query={"reason": args.reason, "force": args.force})
    if operation == "feedback":
        return served(args, "feedback", {"helpful": args.helpful, "context": args.context}, memory_id=args.id)
    return served(args, operation, memory_id=args.id)


def _memory_command(operation: str) -> Callable[[argparse.Namespace], None]:
    def run(args: argparse.Namespace) -> None:
        result = _served_memory(args, operation)
        if result is not None:
            _out(args, result, lambda: _memory_text(result) if operation == "get" else result.explanation)
            return
        from capsule.core import idprefix

        service = service_from(args)
        args.id = idprefix.resolve(service.store, LOCAL_TENANT, args.id)  # the 12 characters search prints
        if operation == "get":
            result = service.get(LOCAL_TENANT, args.id)
        elif operation in ("pin", "unpin"):
            result = service.pin(LOCAL_TENANT, args.id, operation == "pin")
        elif operation == "forget":
            result = service.forget(LOCAL_TENANT, args.id, {"reason": args.reason, "force": args.force})
        elif operation == "restore":
            result = service.restore(LOCAL_TENANT, args.id)
        else:
            result = service.feedback(LOCAL_TENANT, args.id, {"helpful": args.helpful, "context": args.context})
        _out(args, result, lambda: _memory_text(result) if operation == "get" else result.explanation)

    return run


def _memory_text(result: Any) -> str:
    """``capsule get``: the memory's facts, one per line, then its whole text."""
    m = result.memory
    meta = m.meta or {}
    facts = [
        ("id", m.id),
        ("project", m.project),
        ("path", m.path),
        ("pinned", "yes" if m.pinned else None),
        ("tags", ", ".join(meta.get("tags") or []) or None),
        ("type", meta.get("type")),
        ("outcome", meta.get("outcome_status") if meta.get("outcome_status") != "unknown" else None),
        ("retention", m.effective_retention),
        ("created", _instant(m.created_at)),
        ("updated", _instant(m.updated_at) if m.updated_at != m.created_at else None),
        ("feedback", f"{m.helpful} helpful, {m.unhelpful} not" if m.helpful or m.unhelpful else None),
    ]
    head = "\n".join(f"{name + ':':<10} {value}" for name, value in facts if value)
    return f"{head}\n\n{m.content}\n\n{result.explanation}"


def _instant(at: Any) -> str:
    """A time to the second in UTC, ``2026-12-03T16:27:07Z``, the same from a datetime (embedded
    run) as from the ISO text a running server sent (the warm route parses no dates)."""
    return at.isoformat(timespec="seconds").replace("+00:00", "Z") if hasattr(at, "isoformat") else str(at)[:19] + "Z"


def cmd_projects(args: argparse.Namespace) -> None:
    result = served(args, "projects")
    if result is None:
        result = service_from(args).projects(LOCAL_TENANT)
    _out(
        args,
        result,
        lambda: render.table(
            ["project", "memories", "pinned", "forgotten", "limit", "last activity"],
            [
                (p.project, p.memories, p.pinned, p.forgotten, p.retention_limit, _when(p.last_activity))
                for p in result.projects
            ],
            wide="project",
        ),
    )


def cmd_limit(args: argparse.Namespace) -> None:
    result = served(args, "project_settings", {"project": args.project, "retention_limit": args.limit})
    if result is None:
        result = service_from(args).set_retention_limit(LOCAL_TENANT, args.project, {"retention_limit": args.limit})
    _out(args, result, lambda: result.explanation)


# ---- the parser ------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, *, project: bool = True) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--data-dir", help="data folder (default ~/.capsule, or CAPSULE_DATA_DIR)")
    parser.add_argument(
        "--embedder",
        choices=EMBEDDER_NAMES,
        help="which embedder (default: CAPSULE_EMBEDDER, else auto)",
    )
    if project:
        parser.add_argument(
            "--project",
            "-p",
            default=default_project(),
            type=project_name.client_project,
            help="project name or folder (default CAPSULE_PROJECT, else the git repository's or the"
            " current folder's full path)",
        )


def _meta_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tag", action="append", help="a tag (repeatable)")
    parser.add_argument("--type", help="decision, code, error, fix, note, ...")
    parser.add_argument("--component")
    parser.add_argument("--category")
    parser.add_argument("--outcome", choices=["success", "failure", "unknown"])
    parser.add_argument("--author")
    parser.add_argument("--meta", action="append", metavar="KEY=VALUE", help="any other metadata (repeatable)")


EFFECTIVE_CLASSES = ("irreplaceable", "permanent", "replaceable", "ephemeral")


def retention_options(parser: argparse.ArgumentParser) -> None:
    """--retention, --ttl and --expires-at, as store and update take them."""
    from capsule.governance.names import CLASSES, VISIBILITIES  # `capsule store` starts without the rules' imports

    parser.add_argument("--retention", choices=CLASSES, help="retention class (default auto)")
    parser.add_argument("--ttl", type=int, help="seconds until an ephemeral memory expires (1 to 10 years)")
    parser.add_argument("--expires-at", type=_iso, help="when an ephemeral memory expires (ISO 8601)")
    parser.add_argument(
        "--visibility", choices=VISIBILITIES, help="who in the tenant may read it: private (default), shared or public"
    )
    parser.add_argument("--subject", help="the person or end-user it is about")


def retention_fields(args: argparse.Namespace) -> dict[str, Any]:
    fields = {
        "retention": getattr(args, "retention", None),
        "ttl": getattr(args, "ttl", None),
        "expires_at": getattr(args, "expires_at", None),
        "visibility": getattr(args, "visibility", None),
        "subject": getattr(args, "subject", None),
    }
    return {k: v for k, v in fields.items() if v is not None}


def _iso(value: str) -> datetime:
    from datetime import datetime

    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO date/time: {value!r}") from exc


def build_parser(command: str | None = None, *, whole: bool = False) -> argparse.ArgumentParser:
    """The parser of the command a line names: the memory commands' own, and of the other
    commands only the module that adds ``command`` (a hook starts without the others). With no
    command (``capsule --help``) the others are listed by name and help from
    :data:`COMMAND_INDEX`, importing none; ``whole`` imports every module instead."""
    parser = StrictParser(prog="capsule", description="Long-term memory for AI agents.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command in COMMAND_INDEX and not whole:  # its own module's parser alone
        importlib.import_module(COMMAND_INDEX[command][0]).register(sub)
        return parser

    p = sub.add_parser("store", help="store one memory")
    p.add_argument("content", help="the text, or - to read it from standard input")
    p.add_argument("--pin", action="store_true", help="never evict it")
    p.add_argument("--path")
    p.add_argument("--explanation", help="why it is worth remembering")
    p.add_argument("--occurred-at", type=_iso, help="when it happened (ISO 8601), for imports")
    p.add_argument("--supersedes", metavar="ID", help="the older memory this one replaces (the fact changed)")
    retention_options(p)
    _meta_options(p)
    _common(p)
    p.set_defaults(run=cmd_store)

    p = sub.add_parser("ingest", help="chunk and store files and folders (skips binary and .gitignored files)")
    p.add_argument("paths", nargs="+")
    _meta_options(p)
    _common(p)
    p.set_defaults(run=cmd_ingest)

    p = sub.add_parser("search", help="search memories by meaning and keyword")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=8, help="how many results (1-20)")
    p.add_argument("--all-projects", "--global", action="store_true", help="search every project")
    p.add_argument("--mode", choices=["hybrid", "vector", "bm25"], default="hybrid")
    p.add_argument("--component")
    p.add_argument("--category")
    p.add_argument("--tag", action="append")
    p.add_argument("--path-prefix")
    p.add_argument("--since", type=_iso)
    p.add_argument("--until", type=_iso)
    p.add_argument("--as-of", type=_iso, help="search as of this time: recency and 'last month' count from it")
    p.add_argument("--min-relevance", type=float, help="least meaning or keyword score a hit needs (0-1)")
    p.add_argument("--retention", choices=EFFECTIVE_CLASSES, help="only memories of this retention class")
    p.add_argument("--visibility", choices=("private", "shared", "public"), help="only memories of this visibility")
    p.add_argument("--subject", help="only memories about this subject")
    p.add_argument("--include-superseded", action="store_true", help="show what each hit superseded")
    _common(p)
    p.set_defaults(run=cmd_search)

    p = sub.add_parser("list", help="recent (or pinned) memories, newest first")
    p.add_argument("--pinned", action="store_true", help="pinned only")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--cursor")
    p.add_argument("--retention", choices=EFFECTIVE_CLASSES, help="only memories of this retention class")
    p.add_argument("--visibility", choices=("private", "shared", "public"), help="only memories of this visibility")
    p.add_argument("--subject", help="only memories about this subject")
    _common(p)
    p.set_defaults(run=cmd_list)

    for name, text in [
        ("get", "show one memory"),
        ("pin", "pin a memory (never evicted)"),
        ("unpin", "unpin a memory"),
        ("forget", "forget a memory (recoverable for 30 days)"),
        ("restore", "bring back a forgotten memory"),
        ("feedback", "mark a memory helpful or not"),
    ]:
        p = sub.add_parser(name, help=text)
        p.add_argument("id")
        if name == "forget":
            p.add_argument("--reason")
            p.add_argument("--force", action="store_true", help="needed to forget an irreplaceable memory")
        if name == "feedback":
            group = p.add_mutually_exclusive_group(required=True)
            group.add_argument("--helpful", dest="helpful", action="store_true")
            group.add_argument("--unhelpful", "--not-helpful", dest="helpful", action="store_false")
            p.add_argument("--context")
        _common(p, project=False)
        p.set_defaults(run=_memory_command(name))

    p = sub.add_parser("projects", help="projects with their counts and limits")
    _common(p, project=False)
    p.set_defaults(run=cmd_projects)

    p = sub.add_parser("limit", help="set a project's rolling retention limit")
    p.add_argument("limit", type=int)
    _common(p)
    p.set_defaults(run=cmd_limit)

    if command in sub.choices and not whole:
        return parser
    if whole:
        for module in COMMAND_MODULES:
            importlib.import_module(module).register(sub)
    else:
        for name, (_, text) in COMMAND_INDEX.items():
            sub.add_parser(name, help=text, add_help=False)
    return parser


def unknown_command(word: str) -> str | None:
    """The one-line refusal of a command line whose command is none of ours, or None."""
    known = [*BUILTIN_COMMANDS, *COMMAND_INDEX]
    if word in known:
        return None
    from .strict_cli import nearest

    return f"unknown command {word!r} (did you mean {nearest(word, known)!r}?)"


# The commands this module adds itself (build_parser), in its order.
BUILTIN_COMMANDS = (
    "store",
    "ingest",
    "search",
    "list",
    "get",
    "pin",
    "unpin",
    "forget",
    "restore",
    "feedback",
    "projects",
    "limit",
)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and not argv[0].startswith("-") else None
    if command is not None:
        refused = unknown_command(command)
        if refused:
            print(f"capsule: error: {refused}\n{HINT.format(command='capsule')}", file=sys.stderr)
            return 2
    args = build_parser(command).parse_args(argv)
    try:
        args.run(args)
    except CapsuleError as exc:
        print(f"capsule: error: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return 0


__all__ = ["main", "build_parser", "LOCAL_TENANT"]
