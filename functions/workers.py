"""The handler workers of the local gateway: warm processes, like Lambda containers.

Each worker builds the service once, then serves HTTP on the listening socket it shares with
the other workers (uvicorn, :mod:`functions.asgi`) and runs the handlers itself, one
invocation at a time: the Powertools resolver keeps the current event in class state, and a
Lambda container runs one invocation at a time too. :mod:`functions.supervisor` starts,
replaces and stops workers. No request crosses a process boundary, so the answer costs the
handler plus parsing HTTP.
"""

from __future__ import annotations

import asyncio
import faulthandler
import gc
import importlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from capsule.config import Settings

from . import routes

log = logging.getLogger("capsule.gateway")

KEEP_ALIVE_S = 30  # an idle keep-alive connection is closed after this long
DRAIN_S = 60  # requests in flight get this long to finish after SIGTERM (the longest route timeout)


@dataclass(frozen=True)
class WorkerConfig:
    settings: Settings
    data_dir: Path
    region: str
    head_timeout_s: float = 10.0  # functions.asgi.HEAD_TIMEOUT_S: a request's line and headers, else 408
    # capsule.embedders.shared.EmbedServer.client_spec(): the model is held by the serve parent and
    # this worker embeds through it; None: the worker builds the embedder the settings pick.
    shared_embedder: dict[str, Any] | None = None


_resolved: dict[str, Callable[[dict[str, Any], Any], dict[str, Any]]] = {}


def _resolve(handler: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    found = _resolved.get(handler)
    if found is None:
        module_name, _, attribute = handler.partition(":")
        found = _resolved[handler] = getattr(importlib.import_module(module_name), attribute)
    return found


class LocalInvoker:
    """Runs a route's Lambda handler in this process, one invocation at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the asgi app already calls from one thread; this makes it a rule

    def invoke(self, handler: str, event: dict[str, Any]) -> dict[str, Any]:
        from .app import LocalContext

        name = handler.split(":")[0].rsplit(".", 1)[-1]
        context = LocalContext(function_name=f"capsule-{name}", aws_request_id=event["requestContext"]["requestId"])
        with self._lock:
            return _resolve(handler)(event, context)

    def close(self) -> None:
        pass


def warm() -> None:
    """Import every handler now, not on the first request."""
    for route in routes.ROUTES:
        _resolve(route.handler)


GC_THRESHOLD = (7000, 10, 10)  # a young collection per 7,000 allocations, not 700: a search makes thousands


def settle_heap() -> None:
    """Once the worker is built: what it holds now (modules, the service, the handlers) lives as
    long as the process, so it is frozen out of the collector's full passes, which walked all of
    it (a 70 ms pause every ~1,500 searches); and young collections run a tenth as often. The
    collector stays on: cyclic garbage is still reclaimed, a little later."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def _exit_with_parent(on_exit: Callable[[], None]) -> None:
    """Stop this worker when ``capsule serve`` ends, however it ends.

    A server killed outright (SIGKILL, out of memory) runs no cleanup, and its workers ignore
    SIGINT and would keep serving the socket they share. The worker drains like on SIGTERM;
    if that takes too long it exits anyway (SQLite rolls back an open transaction).
    """
    parent = multiprocessing.parent_process()
    if parent is None:  # not started by the supervisor (called directly, as in a test)
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        on_exit()
        time.sleep(DRAIN_S + 5)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def build_gateway(config: WorkerConfig):
    """The service, the handlers and the gateway of this worker (raises if any cannot start)."""
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no CloudWatch here; keep stdout quiet
    from capsule.runtime.service import build_service

    from . import app
    from .credentials import Credentials
    from .gateway import Gateway

    embedder = None
    if config.shared_embedder is not None:
        from capsule.embedders.shared import SharedEmbedder

        embedder = SharedEmbedder(**config.shared_embedder)
    app.set_service(build_service(config.settings, embedder=embedder))
    warm()
    from .job_worker import install_local

    install_local()  # asynchronous jobs run on a thread here; those a stopped server left are taken up
    return Gateway(Credentials(config.data_dir), LocalInvoker(), region=config.region)


class WorkerServer(uvicorn.Server):
    """uvicorn's server, draining on SIGTERM only (SIGINT is the parent's to act on).

    Told to stop, it stops accepting at once (the listener leaves the event loop as soon as
    the loop is free, not at uvicorn's next tick after the request in hand), and every
    connection made from then on is answered 503 (functions.asgi.STOPPING); the requests it
    has read are served, then it exits. Connections still in the shared backlog are the
    supervisor's to answer."""

    _loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().startup(sockets)

    def handle_exit(self, sig: int, frame: Any) -> None:
        if sig != signal.SIGINT:
            self.stop()

    def stop(self) -> None:
        from .asgi import STOPPING

        STOPPING.set()
        self.should_exit = True
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._stop_accepting)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def _stop_accepting(self) -> None:
        # asyncio's Server.close() between accepting a connection and making its transport (a
        # task the accept scheduled) fails that task (Server._attach asserts the server still has
        # its sockets) and leaves the accepted socket to the garbage collector: the client's
        # request is never read and the kernel resets the connection. So the listener leaves the
        # loop first (its accept handle, if queued, is cancelled), and the servers close a step
        # later, once the transports already scheduled are made.
        servers = list(getattr(self, "servers", []))
        loop = asyncio.get_running_loop()
        if isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop):
            for server in servers:
                for sock in server.sockets:
                    loop.remove_reader(sock.fileno())
        loop.call_soon(_close_all, servers)


def _close_all(servers: list[asyncio.Server]) -> None:
    for server in servers:
        server.close()


def serve(config: WorkerConfig, sock: socket.socket, ready: multiprocessing.connection.Connection) -> None:
    """A worker process's main: build the gateway, say so (or why not), serve until told to stop."""
    # The parent decides when to stop: a Ctrl-C reaches the whole process group, and the
    # parent then stops every worker with SIGTERM, which drains.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    terminated = threading.Event()  # a SIGTERM before uvicorn takes the signal over still drains
    signal.signal(signal.SIGTERM, lambda *_: terminated.set())
    faulthandler.enable()  # a worker that crashes in native code says where, on the server's stderr
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("uvicorn").setLevel(logging.WARNING)  # its start and stop lines; serve prints its own
    try:
        from . import accesslog
        from .asgi import GatewayApp, JsonErrorsProtocol

        gateway = build_gateway(config)
    except BaseException as exc:
        ready.send(("failed", f"{type(exc).__name__}: {exc}"))
        raise SystemExit(3) from None
    settle_heap()
    application = GatewayApp(gateway, accesslog.stderr_writer())
    protocol = type("WorkerProtocol", (JsonErrorsProtocol,), {"head_timeout_s": config.head_timeout_s})
    server = WorkerServer(
        uvicorn.Config(
            application,
            http=protocol,
            loop="asyncio",  # _stop_accepting works on asyncio's selector loop
            lifespan="off",
            log_config=None,
            access_log=False,
            server_header=False,
            timeout_keep_alive=KEEP_ALIVE_S,
            timeout_graceful_shutdown=DRAIN_S,
        )
    )
    application.stopping = lambda: server.should_exit
    _exit_with_parent(server.stop)
    threading.Thread(target=lambda: (terminated.wait(), server.stop()), name="sigterm", daemon=True).start()
    ready.send(("ready", os.getpid()))
    ready.close()
    server.run(sockets=[sock])
    from . import app, metering

    metering.release(app.logger.warning)  # drained: the usage counts this worker buffered are written
