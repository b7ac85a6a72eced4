"""``capsule cloud``: one-off steps for the hosted deployment (see README, Deploy to AWS).

- ``setup-atlas``: create the collections' indexes and the Atlas Vector Search index
  (sized for the embedder) on the cluster named by ``CAPSULE_MONGODB_URI``.
- ``new-api-key``: make an API key for the ``api_key_auth`` deployment; prints the key once
  and the entry to add under ``api_keys`` in the deployment's secret (only its hash).
"""

from __future__ import annotations

import argparse
import json
import secrets

from . import render


def cmd_setup_atlas(args: argparse.Namespace) -> None:
    from capsule.config import Settings  # the library: not for `capsule cloud --help`
    from capsule.store.mongo import MongoStore  # the 'mongo' extra; the CLI starts without it

    settings = Settings.from_env(store="mongo")
    store = MongoStore.from_settings(settings)
    store.migrate()
    store.ensure_vector_index(args.dimensions)
    print(f"Indexes ready in database '{settings.mongodb_db}'; the vector index '{store.vector_index}'"
          f" ({args.dimensions} dimensions) builds in the background on Atlas.")


def cmd_new_api_key(args: argparse.Namespace) -> None:
    from functions.auth import key_hash
    from functions.credentials import KEY_PREFIX

    key = KEY_PREFIX + secrets.token_urlsafe(32)
    entry = {args.name: {"sha256": key_hash(key), "tenant": args.tenant}}
    if args.json:
        print(render.as_json({"key": key, "secret_entry": entry}))
        return
    print(key)
    print(f"API key {args.name!r} for tenant {args.tenant!r}, shown once. Add this under \"api_keys\" in the "
          f"deployment's secret:\n{json.dumps(entry)}")


def register(subparsers) -> None:
    cloud = subparsers.add_parser("cloud", help="one-off steps for the AWS deployment")
    sub = cloud.add_subparsers(dest="cloud_command", required=True, metavar="ACTION")
    p = sub.add_parser("setup-atlas", help="create the indexes and the Atlas Vector Search index")
    p.add_argument("--dimensions", type=int, default=1024, help="the embedder's dimensions (voyage-3: 1024)")
    p.set_defaults(run=cmd_setup_atlas)
    p = sub.add_parser("new-api-key", help="make an API key for the deployment's secret")
    p.add_argument("name")
    p.add_argument("--tenant", required=True, help="whose memories the key reaches")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=cmd_new_api_key)
