"""``capsule serve``: the HTTP API, the web console and the scheduled jobs, on one machine.

It runs the local gateway (functions.gateway, .asgi, .workers, .supervisor): worker processes serving HTTP
with uvicorn on one shared socket, each invoking the same Lambda handlers the hosted API runs, one at a
time, on the embedded store with the offline embedder by default.

Scheduled jobs hook in through :data:`BACKGROUND_JOBS`: each entry names a function
``start(service) -> stop`` (``stop`` a no-argument callable, or None) that ``serve`` calls
after the server is up, and whose ``stop`` it calls before shutting down.
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from capsule.core.embedder_names import EMBEDDER_NAMES
from capsule.core.errors import InvalidInput, Unavailable
from mcp_client import local_server

from .cli import settings_from

if TYPE_CHECKING:  # the library and the server load when it starts: `capsule serve --help` needs none
    from capsule.config import Settings
    from capsule.embedders import Embedder
    from capsule.embedders.shared import EmbedServer
    from functions.credentials import Credentials

# functions.workers.WorkerConfig.head_timeout_s, written out for --help (tests/cli/test_cli_start.py checks)
HEAD_TIMEOUT_S = 10.0

# "module:function" entries; function(service) starts background work and returns its stop().
BACKGROUND_JOBS: list[str] = ["capsule_cli.scheduler:start"]

log = logging.getLogger("capsule.serve")


def default_region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def start_jobs(settings: Settings, embedder: Embedder | None = None) -> list[Callable[[], None]]:
    if not BACKGROUND_JOBS:
        return []
    from capsule.runtime.service import build_service

    service = build_service(settings, embedder=embedder)
    stops = []
    for entry in BACKGROUND_JOBS:
        module_name, _, name = entry.partition(":")
        stop = getattr(importlib.import_module(module_name), name)(service)
        if stop is not None:
            stops.append(stop)
    return stops


def _banner(url: str, credentials: Credentials, token: str, created: bool, workers: int) -> str:
    lines = [
        f"capsule serve: listening on {url} ({workers} handler worker{'' if workers == 1 else 's'})",
        f"  web console:  {url}/ui",
        f"  OpenAPI:      {url}/openapi.json",
    ]
    if created:
        lines.append(f"  token (shown once; kept in {credentials.token_path}, mode 0600): {token}")
    else:
        lines.append(f"  token: in {credentials.token_path} (or: capsule keys token)")
    lines.append("  auth: Authorization: Bearer <token or API key (capsule keys create)>, or SigV4 (execute-api)")
    return "\n".join(lines)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _stop_on_signals() -> threading.Event:
    """An event SIGINT and SIGTERM set. Installed before anything starts: a signal that came
    while workers started would otherwise end the process at once and leave them running."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def cmd_serve(args: argparse.Namespace) -> None:
    from capsule.embedders import build_embedder
    from capsule.embedders.shared import EmbedServer, worth_sharing
    from functions import supervisor, workers
    from functions.credentials import Credentials, write_private

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    stopping = _stop_on_signals()
    settings = settings_from(args)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    credentials = Credentials(settings.data_dir)
    token, created = credentials.ensure_token()
    if args.workers < 1:
        raise InvalidInput("--workers must be at least 1", field="workers")
    if not 0 < args.head_timeout <= 600:
        raise InvalidInput("--head-timeout must be more than 0 and at most 600 seconds", field="head_timeout")
    try:
        sock = supervisor.listen(args.host, args.port)
    except OSError as exc:
        raise Unavailable(f"cannot listen on {args.host}:{args.port}: {exc.strerror}; pick another --port") from exc
    host, port = sock.getsockname()[:2]
    url = f"http://{host}:{port}" if ":" not in str(host) else f"http://[{host}]:{port}"
    # The socket listens already (requests wait in its backlog): the banner comes before the
    # workers start, so it is never printed after the first request lines, piped or not.
    print(_banner(url, credentials, token, created, args.workers), flush=True)
    if not _loopback(args.host):
        log.warning("listening beyond loopback (%s): every request still needs a token, key or signature", args.host)
    # One embedder for this server: a model held in memory (the offline MiniLM, ~165 MB once loaded)
    # is held here only, and the workers and the scheduled jobs embed through it
    # (capsule.embedders.shared); the others (hashing, hosted) hold no model: each process builds its own.
    embedder: Embedder | None = None
    embed_server: EmbedServer | None = None
    try:
        if worth_sharing(settings):
            embedder = build_embedder(settings)
            embed_server = EmbedServer(embedder)
    except BaseException:
        sock.close()
        raise
    config = workers.WorkerConfig(
        settings,
        settings.data_dir,
        args.region,
        head_timeout_s=args.head_timeout,
        shared_embedder=embed_server.client_spec() if embed_server else None,
    )
    pool = supervisor.Supervisor(config, sock, args.workers)
    try:
        pool.start()  # fails here, not on the first request, if the store or embedder cannot start
    except BaseException:
        pool.stop()
        if embed_server is not None:
            embed_server.close()
        raise
    stops = start_jobs(settings, embedder)
    # From here the CLI and the hooks on this data folder ask this server (mcp_client.local_server).
    withdraw = local_server.announce(
        settings.data_dir,
        url,
        embedder=settings.embedder,
        store=settings.store,
        token_file=credentials.token_path,
        write=write_private,
    )
    try:
        while not stopping.wait(0.2):
            pool.replace_dead()
    finally:
        pool.stop_accepting()  # at once: new connections get 503 while the workers finish what they hold
        withdraw()
        print("capsule serve: stopping; finishing requests in flight", file=sys.stderr, flush=True)
        for stop in stops:
            stop()
        pool.stop()
        if embed_server is not None:
            embed_server.close()
        print("capsule serve: stopped", file=sys.stderr, flush=True)


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP API and the web console on this machine")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=8787, help="port (default 8787; 0 picks a free one)")
    p.add_argument("--data-dir", help="data folder (default ~/.capsule, or CAPSULE_DATA_DIR)")
    p.add_argument(
        "--embedder",
        choices=EMBEDDER_NAMES,
        help="which embedder (default: CAPSULE_EMBEDDER, else auto)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=min(4, os.cpu_count() or 1),
        help="handler worker processes (default: CPUs, at most 4)",
    )
    p.add_argument(
        "--region",
        default=default_region(),
        help="the region SigV4 signatures must name (default AWS_REGION, else us-east-1)",
    )
    p.add_argument(
        "--head-timeout",
        type=float,
        default=HEAD_TIMEOUT_S,
        metavar="SECONDS",
        help="a request's line and headers must arrive within this (default 10); else 408",
    )
    p.set_defaults(run=cmd_serve)
