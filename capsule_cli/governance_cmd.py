"""``capsule update ID``, ``capsule history ID``, ``capsule revert ID VERSION``: change a memory in
place (its class and expiry too), see every version, bring one back; on the local store."""

from __future__ import annotations

import argparse
import sys

from . import cli, render

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is a start-up cost the warm route (capsule serve answering) does not pay
    from typing import Any


def cmd_update(args: argparse.Namespace) -> None:
    request: dict[str, Any] = cli.retention_fields(args)
    if args.content is not None:
        request["content"] = sys.stdin.read() if args.content == "-" else args.content
    for name in ("explanation", "reason"):
        if getattr(args, name) is not None:
            request[name] = getattr(args, name)
    if args.tag is not None:
        request["tags"] = args.tag
    result = _changed(args, "update", request)
    cli._out(args, result, lambda: result.explanation)


# capsule.governance.models.IF_MATCH_PATTERN, written out so that the warm route loads no library
# (tests/cli/test_cli_start.py checks it): an If-Match the route would refuse by its pattern runs
# embedded, so that the refusal is the library's, as without a server.
IF_MATCH_PATTERN = r'^"?[0-9a-f]{64}"?$'


def _changed(args: argparse.Namespace, operation: str, request: dict[str, Any]) -> Any:
    """update or revert: through the running server (If-Match as its header), else on the store
    opened here; the id as typed, whole or the first characters a table shows."""
    import re

    if args.if_match is None or re.fullmatch(IF_MATCH_PATTERN, args.if_match):
        result = cli.served(
            args,
            operation,
            request,
            memory_id=args.id,
            headers={"If-Match": args.if_match} if args.if_match is not None else None,
        )
        if result is not None:
            return result
    from capsule.core import idprefix

    service = cli.service_from(args)
    memory_id = idprefix.resolve(service.store, cli.LOCAL_TENANT, args.id)
    return getattr(service.history, operation)(cli.LOCAL_TENANT, memory_id, request, if_match=args.if_match)


def cmd_history(args: argparse.Namespace) -> None:
    result = cli.served(args, "history", memory_id=args.id)
    if result is None:
        from capsule.core import idprefix

        service = cli.service_from(args)
        result = service.history.history(cli.LOCAL_TENANT, idprefix.resolve(service.store, cli.LOCAL_TENANT, args.id))
    cli._out(
        args,
        result,
        lambda: "\n".join(
            [
                render.table(
                    ["version", "class", "written", "by", "reason", "content"],
                    [
                        (
                            f"{v.version}{' (current)' if v.current else ''}",
                            v.retention,
                            cli._when(v.created_at),
                            v.actor or "",
                            v.reason or "",
                            v.content,
                        )
                        for v in result.versions
                    ],
                    wide="content",
                ),
                result.explanation,
            ]
        ),
    )


def cmd_revert(args: argparse.Namespace) -> None:
    request = {"version": args.version, **({"reason": args.reason} if args.reason else {})}
    result = _changed(args, "revert", request)
    cli._out(args, result, lambda: result.explanation)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("update", help="change a memory in place (the earlier version is kept)")
    p.add_argument("id")
    p.add_argument("--content", help="the new text, or - to read it from standard input")
    p.add_argument("--tag", action="append", help="a tag (repeatable; replaces the tags)")
    p.add_argument("--explanation")
    p.add_argument("--reason", help="why it changed (kept in the audit record)")
    p.add_argument("--if-match", help="the sha256 last read: refused if the memory changed since")
    cli.retention_options(p)
    cli._common(p, project=False)
    p.set_defaults(run=cmd_update)

    p = sub.add_parser("history", help="every version of a memory, oldest first")
    p.add_argument("id")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_history)

    p = sub.add_parser("revert", help="bring back an earlier version of a memory")
    p.add_argument("id")
    p.add_argument("version", type=int)
    p.add_argument("--reason")
    p.add_argument("--if-match", help="the sha256 last read: refused if the memory changed since")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_revert)
