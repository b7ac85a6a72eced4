"""``capsule patterns ...``: mine recurring errors, match an error, list golden paths.

Beside a running ``capsule serve`` of the same data folder each asks it (POST /v1/patterns/mine,
POST /v1/patterns/detect, GET /v1/patterns/golden-paths: :func:`capsule_cli.cli.served`) and
loads no library; without one it runs the library here (issue 30). The answer is the same.
"""

from __future__ import annotations

import argparse
import sys

from . import cli, render


def _learning(args: argparse.Namespace):
    # not for `capsule patterns --help`, nor for a command a running server answers
    from capsule.runtime.learning import build_learning

    return build_learning(cli.service_from(args))


def cmd_mine(args: argparse.Namespace) -> None:
    request = {"min_occurrences": args.min_occurrences, "category": args.category, "k": args.limit}
    result = cli.served(args, "detect_patterns", request)
    if result is None:
        result = _learning(args).detect_patterns(cli.LOCAL_TENANT, request)
    cli._out(
        args,
        result,
        lambda: "\n".join(
            [
                render.table(
                    ["tag", "category", "seen", "projects", "terms"],
                    [(p.tag, p.category, p.occurrences, len(p.projects), ", ".join(p.terms)) for p in result.patterns],
                    wide="terms",
                ),
                result.explanation,
            ]
        ),
    )


def cmd_detect(args: argparse.Namespace) -> None:
    error = sys.stdin.read() if args.error == "-" else args.error
    request = {"error": error, "k": args.k}
    result = cli.served(args, "pattern_detect", request)
    if result is None:
        result = _learning(args).pattern_detect(cli.LOCAL_TENANT, request)
    lines = []
    for match in result.results:
        lines.append(f"{match.score:.3f}  {match.pattern.tag} ({match.pattern.category}): {match.explanation}")
        lines += [f"       fix: {s.title} [{s.id}] — {s.explanation}" for s in match.solutions]
    cli._out(args, result, lambda: "\n".join(lines + [result.explanation]))


def cmd_golden(args: argparse.Namespace) -> None:
    request = {"min_applications": args.min_applications, "category": args.category, "k": args.limit}
    result = cli.served(args, "golden_paths", query=request)
    if result is None:
        result = _learning(args).golden_paths(cli.LOCAL_TENANT, request)
    cli._out(args, result, lambda: "\n".join([p.explanation for p in result.paths] + [result.explanation]))


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("patterns", help="recurring error patterns: mine, detect, golden paths")
    actions = group.add_subparsers(dest="patterns_command", required=True, metavar="ACTION")
    p = actions.add_parser("mine", help="cluster failures across your projects into patterns now")
    p.add_argument("--min-occurrences", type=int, default=2)
    p.add_argument("--category")
    p.add_argument("--limit", type=int, default=20)
    cli._common(p, project=False)
    p.set_defaults(run=cmd_mine)
    p = actions.add_parser("detect", help="known patterns matching an error (- reads standard input)")
    p.add_argument("error")
    p.add_argument("-k", type=int, default=5)
    cli._common(p, project=False)
    p.set_defaults(run=cmd_detect)
    p = actions.add_parser("golden", help="pattern-fix pairs that worked at least N times")
    p.add_argument("--min-applications", type=int, default=3)
    p.add_argument("--category")
    p.add_argument("--limit", type=int, default=20)
    cli._common(p, project=False)
    p.set_defaults(run=cmd_golden)
