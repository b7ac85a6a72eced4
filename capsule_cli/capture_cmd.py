"""``capsule capture FILE|-``, ``capsule candidates``, ``capsule approve ID``, ``capsule reject ID``,
``capsule capture-threshold VALUE``: capture on the local store.

``capture`` reads conversation events as a JSON list, a JSON object with ``events``, or
JSON Lines (one event a line): ``{"role", "text", "time"?, "session"?, "tool_results"?}``.
"""

from __future__ import annotations

import argparse
import json
import sys

from capsule.core.errors import InvalidInput

from . import cli, render

TYPE_CHECKING = False
if TYPE_CHECKING:  # the library (capsule.capture, pydantic) loads only where a command runs embedded
    from typing import Any

    from capsule.capture import models as cm


def build_capture(service: Any) -> Any:
    from capsule.capture import build_capture as build

    return build(service)


def read_events(text: str) -> list[Any]:
    """Events from a JSON list, an object with ``events``, or JSON Lines."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and "events" in data:
        data = data["events"]
    if isinstance(data, list):
        return data
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            raise InvalidInput(
                f"line {number} is not JSON: events are a JSON list or JSON Lines", field=f"line {number}"
            ) from None
    return events


def _table(candidates: list[cm.Candidate]) -> str:
    return render.table(
        ["id", "score", "type", "status", "text"],
        [(c.id, f"{c.score:.2f}", c.type, c.status, c.text) for c in candidates],
        wide="text",
    )


def cmd_capture(args: argparse.Namespace) -> None:
    text = sys.stdin.read() if args.file == "-" else _read(args.file)
    request = {"project": args.project, "events": read_events(text), "auto_approve": args.auto_approve}
    result = cli.served(args, "capture", request)
    if result is None:
        result = build_capture(cli.service_from(args)).capture(cli.LOCAL_TENANT, request)
    print(render.as_json(result) if args.json else "\n".join([_table(result.candidates), result.explanation]))


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", field="file") from exc


def cmd_candidates(args: argparse.Namespace) -> None:
    project = None if args.all_projects else args.project
    result = cli.served(
        args,
        "candidates",
        query={"project": project, "status": args.status, "cursor": args.cursor, "limit": args.limit},
    )
    if result is None:
        result = build_capture(cli.service_from(args)).candidates(
            cli.LOCAL_TENANT, project=project, status=args.status, cursor=args.cursor, limit=args.limit
        )
    print(
        render.as_json(result)
        if args.json
        else "\n".join(
            [_table(result.candidates), result.explanation]
            + ([f"next: --cursor {result.next_cursor}"] if result.next_cursor else [])
        )
    )


def cmd_decide(args: argparse.Namespace) -> None:
    if args.decision == "approve":
        edits = {k: v for k, v in {"text": args.text, "tags": args.tag, "type": args.type}.items() if v is not None}
        request = {**edits, "pinned": args.pin}
    else:
        request = {"reason": args.reason} if args.reason else {}
    result = cli.served(args, f"candidate_{args.decision}", request, path={"id": args.id})
    if result is None:
        decide = getattr(build_capture(cli.service_from(args)), args.decision)  # approve | reject
        result = decide(cli.LOCAL_TENANT, args.id, request)
    print(render.as_json(result) if args.json else result.explanation)


def cmd_threshold(args: argparse.Namespace) -> None:
    request = {"project": args.project, "threshold": args.threshold}
    result = cli.served(args, "capture_settings", request)
    if result is None:
        result = build_capture(cli.service_from(args)).set_threshold(cli.LOCAL_TENANT, request)
    print(render.as_json(result) if args.json else result.explanation)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="propose memories from conversation events (JSON or JSON Lines, or -)")
    p.add_argument("file", metavar="FILE|-")
    p.add_argument("--auto-approve", action="store_true", help="store those at or above the project's threshold")
    cli._common(p)
    p.set_defaults(run=cmd_capture)

    p = sub.add_parser("candidates", help="the capture queue (pending by default), newest first")
    p.add_argument("--status", choices=["pending", "approved", "rejected"], default="pending")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--cursor")
    p.add_argument("--all-projects", action="store_true", help="every project's candidates")
    cli._common(p)
    p.set_defaults(run=cmd_candidates)

    p = sub.add_parser("approve", help="approve a capture candidate (optionally edited): store it as a memory")
    p.add_argument("id")
    p.add_argument("--text", help="the memory's text, edited")
    p.add_argument("--tag", action="append", help="tags instead of the proposed ones (repeatable)")
    p.add_argument("--type", help="another class than the proposed one")
    p.add_argument("--pin", action="store_true")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_decide, decision="approve")

    p = sub.add_parser("reject", help="reject a capture candidate: never proposed again")
    p.add_argument("id")
    p.add_argument("--reason")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_decide, decision="reject")

    p = sub.add_parser("capture-threshold", help="set the project's auto-approve threshold (0-1)")
    p.add_argument("threshold", type=float)
    cli._common(p)
    p.set_defaults(run=cmd_threshold)
