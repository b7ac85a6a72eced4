"""``capsule jobs run NAME``: run a scheduled job now, on the local store, and print its report.

Always embedded, a running ``capsule serve`` or not: a job works on every tenant of the store
(capsule.jobs.scheduled), and the HTTP API's widest reach is the caller's own tenant (capsule.authz.needs),
so no route runs one; the server runs them on its schedule. ``retention`` and ``redact`` load no
embedding model; ``backfill`` embeds.
"""

from __future__ import annotations

import argparse

from . import cli, render

# capsule.jobs.scheduled' names, written out so `capsule jobs --help` imports no library (checked by
# tests/cli/test_cli_start.py against capsule.jobs.scheduled.JOB_NAMES).
JOB_NAMES = ("retention", "mining", "backfill", "redact")
EMBEDDED_ALWAYS = (
    "Runs on the local store here, beside a running capsule serve too: a job acts across every tenant, "
    "which no API key may do."
)


def cmd_run(args: argparse.Namespace) -> None:
    budget = {
        k: v
        for k, v in (
            ("max_evictions", args.max_evictions),
            ("max_tenants", args.max_tenants),
            ("batch", args.batch),
            ("max_batches", args.max_batches),
            ("max_memories", args.max_memories),
        )
        if v
    }
    allowed = {
        "retention": {"max_evictions"},
        "mining": {"max_tenants"},
        "backfill": {"batch", "max_batches"},
        "redact": {"max_memories"},
    }
    extra = set(budget) - allowed[args.name]
    if extra:
        raise cli.CapsuleError(f"'{args.name}' takes no --{', --'.join(sorted(extra)).replace('_', '-')}")
    from capsule.runtime.learning import build_jobs

    report = build_jobs(cli.service_from(args)).run(args.name, **budget)
    print(render.as_json(report) if args.json else report.explanation)


def register(sub: argparse._SubParsersAction) -> None:
    jobs = sub.add_parser(
        "jobs",
        help="run the scheduled jobs (retention, mining, backfill, redact) now",
        description=EMBEDDED_ALWAYS,
    )
    jobs_sub = jobs.add_subparsers(dest="jobs_command", required=True, metavar="ACTION")
    p = jobs_sub.add_parser("run", help="run one job and print what it did", description=EMBEDDED_ALWAYS)
    p.add_argument("name", choices=JOB_NAMES)
    p.add_argument("--max-evictions", type=int, help="retention: evictions per run")
    p.add_argument("--max-tenants", type=int, help="mining: tenants per run")
    p.add_argument("--batch", type=int, help="backfill: memories per batch")
    p.add_argument("--max-batches", type=int, help="backfill: batches per run")
    p.add_argument("--max-memories", type=int, help="redact: memories swept per run")
    cli._common(p, project=False)
    p.set_defaults(run=cmd_run)
