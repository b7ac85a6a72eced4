"""The command-line options that choose the memory backend (``capsule mcp`` and ``capsule hook``)."""

from __future__ import annotations

import argparse

from capsule.core.embedder_names import EMBEDDER_NAMES

from .auth_methods import METHODS

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks register these options without loading the backends (or typing)
    from .backends import Connection


def connection_options(parser: argparse.ArgumentParser) -> None:
    """The options that pick the backend; shared with the hook commands."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--embedded", action="store_true", help="use the local store directly (the default when no URL is set)"
    )
    mode.add_argument("--url", help="the memory API's base URL (default: CAPSULE_MEMORY_URL)")
    parser.add_argument(
        "--auth",
        choices=list(METHODS),
        help="how to sign remote requests (default: CAPSULE_AUTH, else auto: SigV4 for an "
        "execute-api host, else an API key, else on loopback capsule serve's token)",
    )
    parser.add_argument(
        "--region",
        help="AWS region for SigV4 (default: from the URL, else AWS_REGION); "
        "implies --auth sigv4 unless --auth is given",
    )
    parser.add_argument(
        "--profile",
        help="AWS profile for SigV4 (default: the standard chain); implies --auth sigv4 unless --auth is given",
    )
    parser.add_argument(
        "--api-key-file",
        help="file holding the API key (default: CAPSULE_API_KEY, else the file CAPSULE_API_KEY_FILE names)",
    )
    parser.add_argument(
        "--data-dir",
        help="data folder (default ~/.capsule, or CAPSULE_DATA_DIR): the embedded "
        "store, and for a loopback URL where capsule serve keeps its token",
    )
    parser.add_argument(
        "--embedder",
        choices=EMBEDDER_NAMES,
        help="embedded: which embedder (default: CAPSULE_EMBEDDER, else auto)",
    )


def connection_from(args: argparse.Namespace) -> Connection:
    from .backends import Connection

    return Connection.from_env(
        embedded=args.embedded,
        url=args.url,
        auth=args.auth,
        region=args.region,
        profile=args.profile,
        api_key_file=args.api_key_file,
        data_dir=args.data_dir,
        embedder=args.embedder,
    )


__all__ = ["connection_options", "connection_from"]
