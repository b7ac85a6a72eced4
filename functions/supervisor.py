"""The parent of the handler workers: one listening socket, N workers serving it.

The socket is bound here with a deep backlog and handed to every worker (:mod:`functions.workers`);
the kernel gives each new connection to whichever worker accepts first, and while workers are
replaced, connections wait in the backlog instead of being refused. A worker that dies is
replaced, as Lambda replaces a crashed container. Stopping sends SIGTERM to every worker: each
stops accepting, finishes and answers the requests it holds, closes idle keep-alive connections
and exits.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from capsule.errors import Unavailable

from . import workers

log = logging.getLogger("capsule.gateway")

BACKLOG = 1024   # connections the kernel holds before a worker accepts them (16 or 256 at once all wait)
START_S = 300    # how long a worker may take to build its service (a first model load is slow)


def listen(host: str, port: int, backlog: int = BACKLOG) -> socket.socket:
    """The listening socket, made with protocol IPPROTO_TCP: asyncio turns Nagle off
    (TCP_NODELAY) only on connections whose socket says TCP, and a socket made with protocol 0
    (as ``socket.create_server`` makes it) leaves every keep-alive answer written in two pieces
    waiting ~40 ms for the client's delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


@dataclass
class Worker:
    process: Any  # multiprocessing.Process (spawn context)
    ready: multiprocessing.connection.Connection


@dataclass
class Supervisor:
    config: workers.WorkerConfig
    sock: socket.socket
    count: int
    target: Any = workers.serve  # the worker's main (a test may pass another)
    context: Any = field(default_factory=lambda: multiprocessing.get_context("spawn"))
    running: list[Worker] = field(default_factory=list)
    stopping: bool = False

    def _spawn(self) -> Worker:
        receiver, sender = self.context.Pipe(duplex=False)
        process = self.context.Process(target=self.target, args=(self.config, self.sock, sender),
                                       name="capsule-worker", daemon=False)
        process.start()
        sender.close()
        return Worker(process, receiver)

    def start(self, attempts: int = 2) -> None:
        """Start every worker and wait until each has built its service.

        A worker that dies while starting is replaced once, as a crashed container would be;
        one that cannot start at all (a bad setting, a missing package) fails again and stops
        ``capsule serve`` with its error.
        """
        self.running = [self._spawn() for _ in range(self.count)]
        for index in range(self.count):
            for attempt in range(1, attempts + 1):
                problem = _wait_ready(self.running[index])
                if problem is None:
                    break
                if attempt == attempts:
                    raise Unavailable(f"a handler worker cannot start: {problem}")
                log.error("a handler worker died while starting (%s); starting a fresh one", problem)
                self.running[index].process.join(5)
                self.running[index] = self._spawn()

    def replace_dead(self) -> None:
        """Start a fresh worker for each one that ended (killed, out of memory)."""
        for index, worker in enumerate(self.running):
            if self.stopping or worker.process.is_alive():
                continue
            log.error("a handler worker died (exit code %s); starting a fresh one", worker.process.exitcode)
            worker.process.join()
            worker.ready.close()
            self.running[index] = self._spawn()

    def pids(self) -> list[int]:
        return [w.process.pid for w in self.running if w.process.is_alive()]

    def stop(self, timeout: float = workers.DRAIN_S + 10) -> None:
        """SIGTERM every worker (each drains), wait for them, then close the socket."""
        self.stopping = True
        for worker in self.running:
            if worker.process.is_alive():
                worker.process.terminate()  # SIGTERM
        deadline = time.monotonic() + timeout
        for worker in self.running:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                log.error("a handler worker did not drain in %ss; killing it", timeout)
                worker.process.kill()
                worker.process.join()
            worker.ready.close()
        self.sock.close()


def _wait_ready(worker: Worker) -> str | None:
    """None once the worker says it is ready; else why it is not."""
    waited = multiprocessing.connection.wait([worker.ready, worker.process.sentinel], timeout=START_S)
    if worker.ready in waited:
        try:
            state, detail = worker.ready.recv()
        except EOFError:
            state, detail = "died", None
        if state == "ready":
            return None
        if detail:
            return str(detail)
    if not waited:
        return f"no answer in {START_S}s"
    worker.process.join(5)
    return f"exit code {worker.process.exitcode}"
