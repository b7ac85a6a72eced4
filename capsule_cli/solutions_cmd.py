"""``capsule solutions ...``: import fixpack files, list, show, search and delete solutions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capsule.core.errors import CapsuleError, InvalidInput

from . import cli, render

SOURCE_CHARS = 255  # POST /v1/solutions/import's ``source`` (functions.handlers.solution_import)

# The library (capsule.learning, pydantic, the store) loads where a command runs embedded: `--help`
# and a command a running `capsule serve` answers (cli.served) import none of it (issue 30).


def _learning(args: argparse.Namespace):
    from capsule.runtime.learning import build_learning

    return build_learning(cli.service_from(args))


def _read(path: Path) -> object:
    try:
        return json.loads(path.read_text("utf-8"))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", field="file") from exc
    except ValueError as exc:
        raise InvalidInput(f"{path} is not JSON: {exc}", field="file") from exc


def cmd_import(args: argparse.Namespace) -> None:
    """Import every file; report each, and fail (exit 1) if any failed, after trying all.

    Beside a running server each file goes to POST /v1/solutions/import with ``source`` its name,
    so the answer names the file (``Imported 'T' from FILE as ...``) as an embedded run does; a
    file over the HTTP body limit is imported here (the library loaded for it alone)."""
    learning = None
    results, failed = [], 0
    for name in args.files:
        path = Path(name)
        try:
            body = _read(path)
            # a name the route's ``source`` refuses (a control character, over 255) runs embedded
            result = (
                cli.served(args, "solution_import", body, query={"source": path.name})
                if path.name.isprintable() and len(path.name) <= SOURCE_CHARS
                else None
            )
            if result is None:
                learning = learning or _learning(args)
                result = learning.import_solution(cli.LOCAL_TENANT, body, source=path.name)
            results.append(
                {
                    "file": name,
                    "id": result.solution.id,
                    "created": result.created,
                    "kept_fields": result.kept_fields,
                    "explanation": result.explanation,
                }
            )
        except CapsuleError as exc:
            failed += 1
            results.append({"file": name, "error": exc.message})
    if args.json:
        print(render.as_json(results))
    else:
        for item in results:
            print(f"{item['file']}: {item.get('explanation') or 'error: ' + item['error']}")
    if failed:
        raise CapsuleError(f"{failed} of {len(args.files)} file(s) could not be imported")


def cmd_list(args: argparse.Namespace) -> None:
    request = {"category": args.category, "limit": args.limit, "cursor": args.cursor}
    result = cli.served(args, "solution_list", query=request)
    if result is None:
        result = _learning(args).list_solutions(cli.LOCAL_TENANT, request)
    cli._out(
        args,
        result,
        lambda: "\n".join(
            [
                render.table(
                    ["id", "category", "ok", "failed", "title"],
                    [(s.id, s.category, s.success_count, s.failure_count, s.title) for s in result.solutions],
                    wide="title",
                ),
                result.explanation,
            ]
        ),
    )


def cmd_show(args: argparse.Namespace) -> None:
    result = cli.served(args, "solution_get", path={"id": args.id})
    if result is None:
        result = _learning(args).get_solution(cli.LOCAL_TENANT, args.id)
    solution = result.solution
    cli._out(
        args,
        result,
        lambda: json.dumps(solution if isinstance(solution, dict) else solution.model_dump(mode="json"), indent=2),
    )


def cmd_search(args: argparse.Namespace) -> None:
    error = sys.stdin.read() if args.error == "-" else args.error
    request = {"error": error, "k": args.k}
    result = cli.served(args, "solution_search", request)
    if result is None:
        result = _learning(args).solution_search(cli.LOCAL_TENANT, request)
    cli._out(
        args,
        result,
        lambda: "\n".join(
            [f"{m.score:.3f}  {m.solution.id}  {m.solution.title}\n       {m.explanation}" for m in result.results]
            + [result.explanation]
        ),
    )


def cmd_delete(args: argparse.Namespace) -> None:
    result = cli.served(args, "solution_delete", path={"id": args.id})
    if result is None:
        result = _learning(args).delete_solution(cli.LOCAL_TENANT, args.id)
    cli._out(args, result, lambda: result.explanation)


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("solutions", help="solutions (fixpacks): import, list, show, search, delete")
    actions = group.add_subparsers(dest="solutions_command", required=True, metavar="ACTION")
    p = actions.add_parser("import", help="import fixpack JSON files (one solution each)")
    p.add_argument("files", nargs="+", metavar="FILE")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_import)
    p = actions.add_parser("list", help="solutions, newest first")
    p.add_argument("--category")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--cursor")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_list)
    p = actions.add_parser("show", help="one solution as JSON")
    p.add_argument("id")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_show)
    p = actions.add_parser("search", help="solutions for an error message (- reads standard input)")
    p.add_argument("error")
    p.add_argument("-k", type=int, default=5)
    cli._common(p, project=False)
    p.set_defaults(run=cmd_search)
    p = actions.add_parser("delete", help="delete a solution")
    p.add_argument("id")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_delete)
