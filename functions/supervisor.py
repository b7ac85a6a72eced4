"""The parent of the handler workers: one listening socket, N workers serving it.

The socket is bound here with a deep backlog and handed to every worker (:mod:`functions.workers`);
the kernel gives each new connection to whichever worker accepts first, and while workers are
replaced, connections wait in the backlog instead of being refused. A worker that dies is
replaced, as Lambda replaces a crashed container. Stopping sends SIGTERM to every worker: each
stops accepting, finishes and answers the requests it holds, closes idle keep-alive connections
and exits. Meanwhile the supervisor answers every connection left in the backlog, or made while
the workers drain, with 503 (:class:`Refuser`), and closes the socket only once they are gone:
no connection that reached the socket is reset.
"""

from __future__ import annotations

import ctypes
import json
import logging
import multiprocessing
import multiprocessing.connection
import select
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from capsule.core.errors import Unavailable

from . import workers

log = logging.getLogger("capsule.gateway")

BACKLOG = 1024  # connections the kernel holds before a worker accepts them (16 or 256 at once all wait)
START_S = 300  # how long a worker may take to build its service (a first model load is slow)


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


REFUSE_READ_S = 2.0  # how long the refuser waits for a request's head and body before answering anyway
REFUSE_MAX_BYTES = 1 << 20  # what it reads of a body before answering (the rest is read and dropped)
QUIET_S = 0.2  # at close, the backlog is answered until no connection has arrived for this long
DRAIN_MAX_S = 2.0  # ... or this long at most


def _refusal() -> bytes:
    body = json.dumps(
        {"error": {"code": "unavailable", "message": "the server is stopping; send the request again", "details": None}}
    ).encode()
    return (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
    ) + body


class Refuser:
    """Answers 503 (Retry-After: 1) on the shared socket while the workers drain: connections the
    kernel accepted into the backlog before a worker took them, and new ones until the socket
    closes. Each is read first (head, and body up to its Content-Length) so closing it resets
    nothing; once answered, what the client still sends is read and dropped until it closes."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.answered = 0
        self._stop = threading.Event()
        self._handlers: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._run, name="capsule-refuser", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._accept_all(timeout=0.05, most=64)

    def _accept_all(self, timeout: float, most: int | None = None) -> None:
        """Answer the connections waiting, ``most`` of them at a time (the socket is non-blocking:
        the workers' event loops made it so)."""
        try:
            ready, _, _ = select.select([self.sock], [], [], timeout)
        except (OSError, ValueError):
            return
        while ready and (most is None or most > 0):
            most = None if most is None else most - 1
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            thread = threading.Thread(target=self._answer, args=(conn,), name="capsule-refuse", daemon=True)
            thread.start()
            self._handlers.append(thread)

    def _answer(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(REFUSE_READ_S)
            deadline = time.monotonic() + REFUSE_READ_S
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536 and time.monotonic() < deadline:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length" and value.strip().isdigit():
                    length = int(value.strip())
            remaining = min(length, REFUSE_MAX_BYTES) - len(body)
            while remaining > 0 and time.monotonic() < deadline:
                chunk = conn.recv(min(remaining, 65536))
                if not chunk:
                    break
                remaining -= len(chunk)
            if data:
                conn.sendall(_refusal())
                self.answered += 1
            conn.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + REFUSE_READ_S
            while time.monotonic() < deadline and conn.recv(65536):  # until the client closes: unread
                pass  # bytes would reset the answer
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        """Answer what is left in the backlog, stop listening, and wait for the answers to go out.

        Closing a listening socket resets the connections still in its backlog, and clients keep
        connecting until it closes. So first no new connection is let in (:func:`refuse_new`: the
        kernel drops their SYN; the client's retry then finds the port closed, refused), then the
        backlog is answered to the last connection, then the socket closes."""
        self._stop.set()
        self._thread.join(5)
        if refuse_new(self.sock):
            # Handshakes under way when the filter came still complete (it drops only a new SYN):
            # answer until none has arrived for a while, within a bound.
            quiet_until, give_up = time.monotonic() + QUIET_S, time.monotonic() + DRAIN_MAX_S
            while time.monotonic() < min(quiet_until, give_up):
                before = len(self._handlers)
                self._accept_all(timeout=0.02)
                if len(self._handlers) != before:
                    quiet_until = time.monotonic() + QUIET_S
        self._accept_all(timeout=0)
        self.sock.close()
        deadline = time.monotonic() + 2 * REFUSE_READ_S + 1
        for thread in self._handlers:
            thread.join(max(0.0, deadline - time.monotonic()))


SO_ATTACH_FILTER = 26  # Linux's socket option for a classic BPF filter


# The filter sees a segment from its TCP header: byte 13 holds the flags (SYN 0x02, ACK 0x10).
_SYN_ONLY = (
    (0x30, 0, 0, 13),  # BPF_LD|BPF_B|BPF_ABS: A = the flags
    (0x54, 0, 0, 0x12),  # BPF_ALU|BPF_AND|BPF_K: A &= SYN|ACK
    (0x15, 0, 1, 0x02),  # BPF_JMP|BPF_JEQ|BPF_K: a SYN without ACK (a new connection)?
    (0x06, 0, 0, 0),  # BPF_RET|BPF_K: yes, drop it
    (0x06, 0, 0, 0xFFFFFFFF),  # BPF_RET|BPF_K: no, keep it whole
)


def refuse_new(sock: socket.socket) -> bool:
    """Attach a socket filter to the listening socket that drops a new connection's SYN: no new
    connection reaches its backlog, while a handshake already under way (its ACK) completes and
    is answered rather than reset at close. Linux only; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    program = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in _SYN_ONLY))
    fprog = struct.pack("HL", len(_SYN_ONLY), ctypes.addressof(program))
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    except OSError:
        return False
    return True


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
    refuser: Refuser | None = None

    def _spawn(self) -> Worker:
        receiver, sender = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=self.target, args=(self.config, self.sock, sender), name="capsule-worker", daemon=False
        )
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

    def stop_accepting(self) -> None:
        """SIGTERM every worker (each stops accepting and drains); new connections get 503 here."""
        if self.stopping:
            return
        self.stopping = True
        for worker in self.running:
            if worker.process.is_alive():
                worker.process.terminate()  # SIGTERM
        self.refuser = Refuser(self.sock)

    def stop(self, timeout: float = workers.DRAIN_S + 10) -> None:
        """Stop accepting (if not yet), wait for the workers to drain, then close the socket."""
        self.stop_accepting()
        deadline = time.monotonic() + timeout
        for worker in self.running:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                log.error("a handler worker did not drain in %ss; killing it", timeout)
                worker.process.kill()
                worker.process.join()
            worker.ready.close()
        if self.refuser is not None:
            self.refuser.close()
        else:
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
