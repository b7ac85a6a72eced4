"""``capsule keys rotate-data-key`` and ``capsule keys rewrap``: a tenant's data keys (capsule.crypto).

Both run beside a serving ``capsule serve`` without downtime: rotation adds a data key (earlier
ones keep opening what they sealed; memories are re-sealed as they are read and by the retention
job), re-wrapping wraps the same data keys under another key and re-seals nothing. Each is an
audit record of the tenant.
"""

from __future__ import annotations

import argparse

from functions.credentials import LOCAL_TENANT

from . import render


def _service(args: argparse.Namespace):
    from .cli import service_from

    return service_from(args)


def cmd_rotate(args: argparse.Namespace) -> None:
    from capsule.sealing.reseal import rotate

    service = _service(args)
    said = rotate(service.store, service.governance_store, args.tenant, actor=args.actor, at=service.clock())
    row = service.store.sealer.keyring.rows(args.tenant)[-1]
    print(
        render.as_json(
            {
                "tenant": args.tenant,
                "kid": row.kid,
                "version": row.version,
                "wrapped_by": row.wrapped_by,
                "explanation": said,
            }
        )
        if args.json
        else f"Tenant {args.tenant!r}: {said}."
    )


def cmd_rewrap(args: argparse.Namespace) -> None:
    from capsule.crypto.wrappers import LocalKeyFile
    from capsule.sealing.reseal import rewrap

    service = _service(args)
    keyring = service.store.sealer.keyring
    target = keyring.wrapper
    if args.from_key_file:  # the data keys are wrapped by that file: open with it, wrap with this deployment's
        keyring.wrapper = LocalKeyFile(args.from_key_file)
    said = rewrap(service.store, service.governance_store, args.tenant, target, actor=args.actor, at=service.clock())
    keyring.wrapper = target
    print(
        render.as_json({"tenant": args.tenant, "wrapped_by": target.id, "explanation": said})
        if args.json
        else f"Tenant {args.tenant!r}: {said}."
    )


def register(sub) -> None:
    """Add the data-key actions to the ``capsule keys`` group."""
    for name, run, text in (
        ("rotate-data-key", cmd_rotate, "make a new data key for a tenant (no downtime)"),
        ("rewrap", cmd_rewrap, "wrap a tenant's data keys under this deployment's key"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--tenant", default=LOCAL_TENANT, help=f"whose data keys (default {LOCAL_TENANT!r})")
        p.add_argument("--actor", default="operator", help="who, for the audit record (default 'operator')")
        if name == "rewrap":
            p.add_argument("--from-key-file", help="the key file that wraps them now (a key file replaced)")
        p.add_argument("--json", action="store_true", help="print the result as JSON")
        p.add_argument("--data-dir", help="data folder (default ~/.capsule, or CAPSULE_DATA_DIR)")
        p.set_defaults(run=run)
