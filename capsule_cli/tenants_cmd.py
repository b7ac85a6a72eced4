"""``capsule tenants merge --from-sessions``: move what was stored under assumed-role session
ARNs into the role's tenant (see :mod:`capsule.store.tenants`).

It works on the store the settings name: the embedded SQLite store, or the hosted MongoDB
with ``CAPSULE_STORE=mongo CAPSULE_MONGODB_URI=...``. Without ``--apply`` it only says
what it would move. Always embedded, a running ``capsule serve`` or not: it acts across
tenants, which no API key may do (the HTTP API's widest reach is the caller's own tenant).
"""

from __future__ import annotations

import argparse

from . import cli, render


def cmd_merge(args: argparse.Namespace) -> None:
    from capsule.runtime.service import open_store
    from capsule.store import tenants  # the library: not for `capsule tenants --help`

    settings = cli.settings_from(args)
    store = open_store(settings)
    try:
        report = tenants.merge(
            tenants.mover_for(store),
            apply=args.apply,
            role=args.role,
            store=store,
            default_limit=settings.retention_limit,
        )
    finally:
        store.close()
    print(render.as_json(report.to_dict()) if args.json else report.explanation)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "tenants",
        help="tenant maintenance (hosted deployments)",
        description="Runs on the store the settings name, beside a running capsule serve too: it acts "
        "across tenants, which no API key may do.",
    )
    actions = parser.add_subparsers(dest="tenants_command", required=True, metavar="ACTION")
    p = actions.add_parser("merge", help="merge tenants stored under assumed-role sessions into their role")
    p.add_argument(
        "--from-sessions",
        action="store_true",
        required=True,
        help="every tenant that is an assumed-role session ARN goes to arn:aws:iam::ACCOUNT:role/NAME",
    )
    p.add_argument("--role", help="only the sessions of this role (arn:aws:iam::ACCOUNT:role/NAME)")
    p.add_argument("--apply", action="store_true", help="move the data (without it: a dry run that only counts)")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_merge)
