"""``capsule keys``: the local gateway's API keys and SigV4 access keys (see functions.credentials)."""

from __future__ import annotations

import argparse
import getpass
import os
import sys

from capsule.core.paths import data_dir_from
from functions.credentials import LOCAL_TENANT, Credentials

from . import render

# functions.scopes (pydantic, the models) loads only to check or describe a scope: `capsule keys
# --help` and a list of unscoped keys start without it (issue 30).


def describe(scope) -> str:
    if not scope:
        return "full"
    from functions.scopes import describe as described

    return described(scope)


def parse_scope(scope):
    from functions.scopes import parse_scope as parsed

    return parsed(scope)


def _credentials(args: argparse.Namespace) -> Credentials:
    data_dir = data_dir_from(os.environ, getattr(args, "data_dir", None)).expanduser()
    data_dir.mkdir(parents=True, exist_ok=True)
    return Credentials(data_dir)


def _print(args: argparse.Namespace, value, text: str) -> None:
    print(render.as_json(value) if args.json else text)


def scope_from(args: argparse.Namespace) -> dict:
    """The scope the options ask for (functions.scopes checks it): nothing given, full access."""
    scope: dict = {}
    if args.read_only:
        scope["access"] = "read"
    if args.access is not None:
        scope["access"] = args.access
    if args.project:
        scope["projects"] = list(args.project)
    if args.subject:
        scope["subjects"] = list(args.subject)
    if args.sees is not None:
        scope["sees"] = args.sees
    return scope


def cmd_create(args: argparse.Namespace) -> None:
    scope = scope_from(args)
    key = _credentials(args).create_key(args.name, args.tenant, scope)
    limits = parse_scope(scope).plain()
    _print(
        args,
        {"name": args.name, "tenant": args.tenant, "key": key, **({"scope": limits} if limits else {})},
        f"{key}\nAPI key {args.name!r} for tenant {args.tenant!r} ({describe(limits)} access): shown once, only "
        "its hash is kept. Send it as 'Authorization: Bearer <key>'.",
    )


def cmd_list(args: argparse.Namespace) -> None:
    creds = _credentials(args)
    keys, sigv4 = creds.list_keys(), creds.list_sigv4()
    _print(
        args,
        {"api_keys": keys, "sigv4": sigv4},
        "\n".join(
            [
                render.table(
                    ["api key", "tenant", "scope", "created"],
                    [(k["name"], k["tenant"], describe(k.get("scope")), k["created_at"]) for k in keys],
                ),
                render.table(["sigv4 access key", "tenant"], [(k["access_key_id"], k["tenant"]) for k in sigv4]),
            ]
        ),
    )


def cmd_revoke(args: argparse.Namespace) -> None:
    _credentials(args).revoke_key(args.name)
    _print(args, {"revoked": args.name}, f"Revoked API key {args.name!r}; requests with it now get 401.")


def cmd_add_sigv4(args: argparse.Namespace) -> None:
    secret = args.secret
    if secret is None:
        secret = sys.stdin.readline().strip() if not sys.stdin.isatty() else getpass.getpass("secret access key: ")
    _credentials(args).add_sigv4(args.access_key_id, secret, args.tenant)
    _print(
        args,
        {"access_key_id": args.access_key_id, "tenant": args.tenant},
        f"SigV4 requests signed with {args.access_key_id} (service execute-api) now act as tenant {args.tenant!r}.",
    )


def cmd_remove_sigv4(args: argparse.Namespace) -> None:
    _credentials(args).remove_sigv4(args.access_key_id)
    _print(args, {"removed": args.access_key_id}, f"Removed SigV4 access key {args.access_key_id}.")


def cmd_token(args: argparse.Namespace) -> None:
    creds = _credentials(args)
    token, _ = creds.ensure_token()
    _print(args, {"token": token, "path": str(creds.token_path)}, token)


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--data-dir", help="data folder (default ~/.capsule, or CAPSULE_DATA_DIR)")


def register(subparsers) -> None:
    keys = subparsers.add_parser("keys", help="API keys and SigV4 access keys for capsule serve")
    sub = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")

    p = sub.add_parser("create", help="make a named API key (shown once)")
    p.add_argument("name")
    p.add_argument("--tenant", default=LOCAL_TENANT, help=f"whose memories it reaches (default {LOCAL_TENANT!r})")
    p.add_argument("--read-only", action="store_true", help="the key reads only (the same as --access read)")
    p.add_argument("--access", help="read, write or admin (default admin: everything)")
    p.add_argument(
        "--project",
        action="append",
        metavar="PATTERN",
        help="limit the key to projects matching this fnmatch pattern (repeat for more)",
    )
    p.add_argument(
        "--subject",
        action="append",
        metavar="NAME",
        help="limit the key to memories about this subject (repeat for more)",
    )
    p.add_argument("--sees", help="the most private visibility it reads: private (default, all), shared or public")
    _options(p)
    p.set_defaults(run=cmd_create)

    p = sub.add_parser("list", help="API keys and SigV4 access keys (never the secrets)")
    _options(p)
    p.set_defaults(run=cmd_list)

    p = sub.add_parser("revoke", help="revoke a named API key")
    p.add_argument("name")
    _options(p)
    p.set_defaults(run=cmd_revoke)

    p = sub.add_parser("add-sigv4", help="accept SigV4 signatures made with this access key")
    p.add_argument("access_key_id")
    p.add_argument("--secret", help="the secret access key (default: read from standard input)")
    p.add_argument("--tenant", required=True, help="the tenant (principal) these requests act as")
    _options(p)
    p.set_defaults(run=cmd_add_sigv4)

    p = sub.add_parser("remove-sigv4", help="stop accepting an access key")
    p.add_argument("access_key_id")
    _options(p)
    p.set_defaults(run=cmd_remove_sigv4)

    p = sub.add_parser("token", help="print the local bearer token (made if missing)")
    _options(p)
    p.set_defaults(run=cmd_token)

    from . import datakeys_cmd  # encryption at rest: the tenants' data keys

    datakeys_cmd.register(sub)
