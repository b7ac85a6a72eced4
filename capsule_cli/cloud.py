"""``capsule cloud``: one-off steps for the hosted deployment (see docs/aws.md).

- ``setup-atlas``: make the cluster named by ``CAPSULE_MONGODB_URI`` ready: the collections'
  indexes, the Atlas Vector Search index (sized for the configured embedder, scalar-quantized)
  and the Atlas Search index, created or updated, then waited for until queryable. Run twice,
  it changes nothing (capsule.store.atlas_setup).
- ``new-api-key``: make an API key for the ``api_key_auth`` deployment; prints the key once
  and the entry to add under ``api_keys`` in the deployment's secret (only its hash).
- ``precheck``: before a deploy, warn when the account's Lambda concurrency quota is below what
  the stage's throttle admits (capsule_cli.precheck).
"""

from __future__ import annotations

import argparse
import json
import secrets

from . import render


def cmd_setup_atlas(args: argparse.Namespace) -> None:
    import sys

    from capsule.config import Settings  # the library: not for `capsule cloud --help`
    from capsule.core.errors import Conflict
    from capsule.embedders import build_embedder, describe
    from capsule.store.atlas_setup import drop_old_text_indexes, ensure_search_indexes, wanted_indexes
    from capsule.store.mongo import MongoStore  # the 'mongo' extra; the CLI starts without it

    settings = Settings.from_env(store="mongo")
    store = MongoStore.from_settings(settings)
    embedder = describe(build_embedder(settings))
    if args.dimensions is not None and args.dimensions != embedder.dims:
        raise Conflict(
            f"--dimensions {args.dimensions} is not the embedder's {embedder.dims} "
            f"({embedder.sentence()}): the vector index must hold the vectors the embedder makes"
        )

    def progress(line: str) -> None:
        print(f"  {line}", file=sys.stderr, flush=True)

    print(f"Sizing the vector index for {embedder.sentence()}.", file=sys.stderr, flush=True)
    store.migrate()
    for name in drop_old_text_indexes(store.memories):
        progress(f"dropped the classic text index {name} (Atlas Search replaces it)")
    done = ensure_search_indexes(
        store.memories,
        wanted_indexes(embedder.dims, vector_index=store.vector_index, quantization=args.quantization),
        wait_s=args.wait,
        progress=progress,
    )
    changed = [f"{name} {action}" for name, action in done.items() if action != "unchanged"]
    state = "queryable" if args.wait > 0 else "building on Atlas (not waited for)"
    print(
        f"Indexes ready in database '{settings.mongodb_db}'; search indexes {state}: "
        f"{', '.join(done)} ({'; '.join(changed) if changed else 'nothing changed'})."
    )


def cmd_new_api_key(args: argparse.Namespace) -> None:
    from functions.auth import key_hash
    from functions.credentials import KEY_PREFIX

    key = KEY_PREFIX + secrets.token_urlsafe(32)
    entry = {args.name: {"sha256": key_hash(key), "tenant": args.tenant}}
    if args.json:
        print(render.as_json({"key": key, "secret_entry": entry}))
        return
    print(key)
    print(
        f'API key {args.name!r} for tenant {args.tenant!r}, shown once. Add this under "api_keys" in the '
        f"deployment's secret:\n{json.dumps(entry)}"
    )


def register(subparsers) -> None:
    cloud = subparsers.add_parser("cloud", help="one-off steps for the AWS deployment")
    sub = cloud.add_subparsers(dest="cloud_command", required=True, metavar="ACTION")
    p = sub.add_parser("setup-atlas", help="create the indexes, the Atlas Vector Search and Atlas Search indexes")
    p.add_argument(
        "--dimensions",
        type=int,
        default=None,
        help="check: the dimensions the vector index must hold (default: the configured embedder's; "
        "voyage 1024, openai 1536, minilm 384); a mismatch fails",
    )
    p.add_argument(
        "--quantization",
        choices=["none", "scalar", "binary"],
        default=None,
        help="the vector index's quantization (default scalar: a quarter of the RAM of float vectors; "
        "binary past ~10M memories)",
    )
    p.add_argument(
        "--wait",
        type=float,
        default=600.0,
        help="seconds to wait until the search indexes are queryable (0: do not wait)",
    )
    p.set_defaults(run=cmd_setup_atlas)
    p = sub.add_parser("new-api-key", help="make an API key for the deployment's secret")
    p.add_argument("name")
    p.add_argument("--tenant", required=True, help="whose memories the key reaches")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=cmd_new_api_key)
    from . import precheck  # `capsule cloud precheck`: the account's Lambda concurrency against the throttle

    precheck.register(sub)
