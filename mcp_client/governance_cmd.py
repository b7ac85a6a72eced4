"""``capsule update ID``, ``capsule history ID``, ``capsule revert ID VERSION``: change a memory in
place (its class and expiry too), see every version, bring one back; on the local store."""

from __future__ import annotations

import argparse
import sys
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is a start-up cost the warm route (capsule serve answering) does not pay
    from typing import Any

from capsule.governance.names import CLASSES, VISIBILITIES  # `capsule store` starts without the rules' imports

from . import cli, render


def retention_options(parser: argparse.ArgumentParser) -> None:
    """--retention, --ttl and --expires-at, as store and update take them."""
    parser.add_argument("--retention", choices=CLASSES, help="retention class (default auto)")
    parser.add_argument("--ttl", type=int, help="seconds until an ephemeral memory expires (1 to 10 years)")
    parser.add_argument("--expires-at", type=cli._iso, help="when an ephemeral memory expires (ISO 8601)")
    parser.add_argument("--visibility", choices=VISIBILITIES,
                        help="who in the tenant may read it: private (default), shared or public")
    parser.add_argument("--subject", help="the person or end-user it is about")


def retention_fields(args: argparse.Namespace) -> dict[str, Any]:
    fields = {"retention": getattr(args, "retention", None), "ttl": getattr(args, "ttl", None),
              "expires_at": getattr(args, "expires_at", None), "visibility": getattr(args, "visibility", None),
              "subject": getattr(args, "subject", None)}
    return {k: v for k, v in fields.items() if v is not None}


def cmd_update(args: argparse.Namespace) -> None:
    request: dict[str, Any] = retention_fields(args)
    if args.content is not None:
        request["content"] = sys.stdin.read() if args.content == "-" else args.content
    for name in ("explanation", "reason"):
        if getattr(args, name) is not None:
            request[name] = getattr(args, name)
    if args.tag is not None:
        request["tags"] = args.tag
    result = cli.service_from(args).history.update(cli.LOCAL_TENANT, args.id, request, if_match=args.if_match)
    cli._out(args, result, lambda: result.explanation)


def _minute(at: Any) -> str:
    """A time to the minute: a datetime (embedded) or the ISO text a running server sent."""
    if not at:
        return ""
    return at[:16].replace("T", " ") if isinstance(at, str) else at.strftime("%Y-%m-%d %H:%M")


def cmd_history(args: argparse.Namespace) -> None:
    result = cli.served(args, "history", memory_id=args.id)
    if result is None:
        from capsule import idprefix

        service = cli.service_from(args)
        result = service.history.history(cli.LOCAL_TENANT, idprefix.resolve(service.store, cli.LOCAL_TENANT, args.id))
    cli._out(args, result, lambda: "\n".join([
        render.table(["version", "class", "written", "by", "reason", "content"],
                     [(f"{v.version}{' (current)' if v.current else ''}", v.retention,
                       _minute(v.created_at), v.actor or "",
                       v.reason or "", v.content) for v in result.versions], wide="content"),
        result.explanation]))


def cmd_revert(args: argparse.Namespace) -> None:
    request = {"version": args.version, **({"reason": args.reason} if args.reason else {})}
    result = cli.service_from(args).history.revert(cli.LOCAL_TENANT, args.id, request, if_match=args.if_match)
    cli._out(args, result, lambda: result.explanation)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("update", help="change a memory in place (the earlier version is kept)")
    p.add_argument("id")
    p.add_argument("--content", help="the new text, or - to read it from standard input")
    p.add_argument("--tag", action="append", help="a tag (repeatable; replaces the tags)")
    p.add_argument("--explanation")
    p.add_argument("--reason", help="why it changed (kept in the audit record)")
    p.add_argument("--if-match", help="the sha256 last read: refused if the memory changed since")
    retention_options(p)
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
