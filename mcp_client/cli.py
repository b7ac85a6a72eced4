"""The ``capsule`` command: the composition root that wires settings, store, embedder and
service, and that nothing else imports.

Memory commands call the library directly on the embedded store; ``store`` and ``search``
ask the running ``capsule serve`` of the same data folder first (:mod:`mcp_client.local_server`),
which has the embedding model loaded. Other command groups (serve, keys, mcp, hook, install,
jobs, solutions, bench, eval) live in their own modules and register themselves through
:data:`COMMAND_MODULES`. Start-up time is the hooks' and the commands' main cost, so heavy
modules load where they are used, and a command line names the one module it needs
(:data:`COMMAND_HOMES`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from capsule.errors import CapsuleError

from . import local_server, project_name, render
from .strict_cli import StrictParser

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, datetime and logging are start-up costs the warm route does not pay
    from datetime import datetime
    from typing import Any, Callable

    from capsule import MemoryService, Settings

LOCAL_TENANT = "local"

# Modules with a ``register(subparsers)`` function adding their commands.
COMMAND_MODULES: list[str] = [
    "mcp_client.serve", "mcp_client.keys", "mcp_client.loadtest", "mcp_client.cloud", "mcp_client.bench",
    "mcp_client.evaluate", "mcp_client.jobs_cmd", "mcp_client.solutions_cmd", "mcp_client.patterns_cmd",
    "mcp_client.mcp_server", "mcp_client.hooks", "mcp_client.install", "mcp_client.tenants_cmd",
    "mcp_client.transfer_cmd", "mcp_client.capture_cmd", "mcp_client.sync_cmd", "mcp_client.governance_cmd",
]
# Commands whose start-up an agent waits on, and the one module that adds each: a command line
# naming one imports that module alone (any other imports every module above).
COMMAND_HOMES: dict[str, str] = {"hook": "mcp_client.hooks", "mcp": "mcp_client.mcp_server",
                                 "serve": "mcp_client.serve"}


def default_project() -> str:
    return project_name.default_project()


def settings_from(args: argparse.Namespace) -> "Settings":
    from capsule import Settings

    return Settings.from_env(data_dir=getattr(args, "data_dir", None), embedder=getattr(args, "embedder", None))


def service_from(args: argparse.Namespace) -> "MemoryService":
    import logging

    from capsule.runtime import build_service

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return build_service(settings_from(args))


def served(args: argparse.Namespace, route: str, body: Any) -> Any:
    """The running ``capsule serve``'s answer for this data folder, or None: run embedded."""
    server = local_server.find(os.environ, data_dir=getattr(args, "data_dir", None),
                               embedder=getattr(args, "embedder", None))
    if server is None:
        return None
    try:
        return server.call(route, body)
    except local_server.NotAnswering:
        return None


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
        "project": args.project, "content": content, "pinned": args.pin, "path": args.path,
        "explanation": args.explanation, "meta": _meta(args), "occurred_at": args.occurred_at,
        **_governed(args),
    }
    result = served(args, "store", request)
    if result is None:
        result = service_from(args).store_memory(LOCAL_TENANT, request)
    _out(args, result, lambda: f"{result.memory.id}\n{result.explanation}")


def _governed(args: argparse.Namespace) -> dict[str, Any]:
    """The governance options a command was given (capsule.governance), left out when not."""
    from .governance_cmd import retention_fields

    fields = retention_fields(args)
    if getattr(args, "supersedes", None):
        fields["supersedes"] = args.supersedes
    return fields


def cmd_ingest(args: argparse.Namespace) -> None:
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:  # before anything is stored: a typo must not look like an empty folder
        raise CapsuleError(f"no such file or folder: {', '.join(missing)}; nothing was ingested")
    from .files import ingestible

    service = service_from(args)
    candidates = list(ingestible([Path(p) for p in args.paths]))
    summary = {"files": 0, "chunks": 0, "stored": 0, "deduplicated": 0, "skipped": [], "evicted": 0}
    from .progress import Progress

    bar = Progress("ingest (files)", len(candidates))
    for path, skip in candidates:
        bar.advance()
        if skip:
            summary["skipped"].append({"path": str(path), "reason": skip})
            continue
        result = service.ingest(LOCAL_TENANT, {
            "project": args.project, "text": path.read_text("utf-8", "replace"), "path": str(path),
            "meta": _meta(args),
        })
        summary["files"] += 1
        summary["chunks"] += result.chunks
        summary["deduplicated"] += len(result.deduplicated)
        summary["stored"] += result.chunks - len(result.deduplicated)
        summary["evicted"] += len(result.evicted)
    bar.close()
    _out(args, summary, lambda: (
        f"ingested {summary['files']} files: {summary['chunks']} chunks, {summary['stored']} stored, "
        f"{summary['deduplicated']} already stored, {len(summary['skipped'])} skipped, "
        f"{summary['evicted']} evicted by the rolling limit"
    ))


def cmd_search(args: argparse.Namespace) -> None:
    filters = {"component": args.component, "category": args.category, "tags": args.tag or [],
               "path_prefix": args.path_prefix, "since": args.since, "until": args.until,
               "retention": args.retention, "visibility": args.visibility, "subject": args.subject}
    request = {"query": args.query, "k": args.k, "mode": args.mode, "global": args.all_projects,
               "filters": {k: v for k, v in filters.items() if v}}
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
    _out(args, result, lambda: "\n".join([
        render.table(
            ["id", "score", "vec", "bm25", "time", "fb", "content"],
            [(h.id[:12], f"{h.score:.3f}", f"{h.components.vector:.2f}", f"{h.components.bm25:.2f}",
              f"{h.components.time:.2f}", f"{h.components.feedback:.2f}", h.content) for h in result.results],
            wide="content",
        ),
        result.explanation,
    ]))


def _memory_rows(memories) -> list[tuple]:
    return [(m.id, "yes" if m.pinned else "", m.created_at.strftime("%Y-%m-%d %H:%M"),
             m.content) for m in memories]


def cmd_list(args: argparse.Namespace) -> None:
    result = service_from(args).list_memories(LOCAL_TENANT, {
        "project": args.project, "pinned_only": args.pinned, "limit": args.limit, "cursor": args.cursor,
        **{k: v for k, v in (("retention", args.retention), ("visibility", args.visibility),
                             ("subject", args.subject)) if v},
    })
    _out(args, result, lambda: "\n".join(
        [render.table(["id", "pinned", "created", "content"], _memory_rows(result.memories), wide="content"),
         result.explanation] + ([f"next: --cursor {result.next_cursor}"] if result.next_cursor else [])
    ))


def _memory_command(operation: str) -> Callable[[argparse.Namespace], None]:
    def run(args: argparse.Namespace) -> None:
        from capsule import idprefix

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
        _out(args, result, lambda: (
            f"{result.memory.content}\n\n{result.explanation}" if operation == "get" else result.explanation
        ))

    return run


def cmd_projects(args: argparse.Namespace) -> None:
    result = service_from(args).projects(LOCAL_TENANT)
    _out(args, result, lambda: render.table(
        ["project", "memories", "pinned", "forgotten", "limit", "last activity"],
        [(p.project, p.memories, p.pinned, p.forgotten, p.retention_limit,
          p.last_activity.strftime("%Y-%m-%d %H:%M") if p.last_activity else "") for p in result.projects],
        wide="project",
    ))


def cmd_limit(args: argparse.Namespace) -> None:
    result = service_from(args).set_retention_limit(LOCAL_TENANT, args.project, {"retention_limit": args.limit})
    _out(args, result, lambda: result.explanation)


# ---- the parser ------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, *, project: bool = True) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--data-dir", help="data folder (default ~/.capsule, or CAPSULE_DATA_DIR)")
    parser.add_argument("--embedder", choices=["auto", "minilm", "hashing", "voyage", "openai"],
                        help="which embedder (default: CAPSULE_EMBEDDER, else auto)")
    if project:
        parser.add_argument("--project", "-p", default=default_project(),
                            help="project name (default CAPSULE_PROJECT, else the git repository's or the current folder's name)")


def _meta_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tag", action="append", help="a tag (repeatable)")
    parser.add_argument("--type", help="decision, code, error, fix, note, ...")
    parser.add_argument("--component")
    parser.add_argument("--category")
    parser.add_argument("--outcome", choices=["success", "failure", "unknown"])
    parser.add_argument("--author")
    parser.add_argument("--meta", action="append", metavar="KEY=VALUE", help="any other metadata (repeatable)")


EFFECTIVE_CLASSES = ("irreplaceable", "permanent", "replaceable", "ephemeral")


def _governance_options(parser: argparse.ArgumentParser) -> None:
    from .governance_cmd import retention_options

    retention_options(parser)


def _iso(value: str) -> datetime:
    from datetime import datetime

    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO date/time: {value!r}") from exc


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; given the command a line names, only the modules it needs."""
    parser = StrictParser(prog="capsule", description="Long-term memory for AI agents.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command in COMMAND_HOMES:  # its own module's parser alone: a hook starts without the others
        importlib.import_module(COMMAND_HOMES[command]).register(sub)
        return parser

    p = sub.add_parser("store", help="store one memory")
    p.add_argument("content", help="the text, or - to read it from standard input")
    p.add_argument("--pin", action="store_true", help="never evict it")
    p.add_argument("--path")
    p.add_argument("--explanation", help="why it is worth remembering")
    p.add_argument("--occurred-at", type=_iso, help="when it happened (ISO 8601), for imports")
    p.add_argument("--supersedes", metavar="ID", help="the older memory this one replaces (the fact changed)")
    _governance_options(p)
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

    for name, text in [("get", "show one memory"), ("pin", "pin a memory (never evicted)"),
                       ("unpin", "unpin a memory"), ("forget", "forget a memory (recoverable for 30 days)"),
                       ("restore", "bring back a forgotten memory"), ("feedback", "mark a memory helpful or not")]:
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

    if command in sub.choices:
        return parser
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and not argv[0].startswith("-") else None
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
