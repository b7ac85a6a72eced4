"""The MCP stdio transport ``capsule mcp`` serves on: every request received is answered.

The SDK's own stdio loop fits a client that stays connected. Hooks do not: they write their
requests, close stdin at once and wait for the process to exit (COMPAT.md §3.1). At EOF the
SDK's dispatcher cancels the calls still running, so their answers were never written although
their work was done. This transport keeps the server's read side open after stdin's EOF until
every request it passed on has its answer written and flushed, then closes it, so the server
(the SDK's own dispatcher, handshake and tools, unchanged) winds down and the process exits.

It also speaks to the Vector Bridge's hooks as that server did, and better where it lost data
(COMPAT.md §1.1, §6):
- a final line without ``\\n`` at EOF is a request like any other;
- a first request sent without ``initialize`` is answered: an ``initialize`` of our own goes
  ahead of it (its answer is not written), so the SDK's session opens as for any client;
- a line that is not JSON, or not JSON-RPC, gets a JSON-RPC error rather than silence;
- stdout carries JSON-RPC lines only: while serving, file descriptor 1 points at stderr (so a
  stray ``print`` or a child process cannot corrupt the wire) and 0 at the null device.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp_types.version import LATEST_HANDSHAKE_VERSION

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.server.lowlevel.server import Server
    from mcp.server.mcpserver import MCPServer

# The id of the ``initialize`` sent for a client that did not send one; its answer is not written.
IMPLICIT_INITIALIZE_ID = "capsule-implicit-initialize"
IMPLICIT_CLIENT = {"name": "capsule-implicit-client", "version": "0"}


@dataclass
class Wire:
    """The process's real stdin and stdout, moved off descriptors 0 and 1 while serving."""

    stdin: BinaryIO
    stdout: BinaryIO


@contextmanager
def claimed_stdio() -> Iterator[Wire]:
    """Take stdin/stdout for the protocol; descriptor 1 writes to stderr, 0 reads nothing.

    Claimed before the server is built, so nothing printed while tools load reaches the wire.
    """
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)  # non-inheritable: a tool's child never gets them
    _point(0, os.devnull, os.O_RDONLY)
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr (a launcher closed it): stray output goes nowhere rather than the wire
        _point(1, os.devnull, os.O_WRONLY)
    # stdin is never closed here: should the server stop first, the reading thread may still be
    # blocked on it, and a closed descriptor can be reused under it.
    stdout = os.fdopen(wire_out, "wb")
    try:
        yield Wire(stdin=os.fdopen(wire_in, "rb", closefd=False), stdout=stdout)
    finally:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        stdout.close()


def _point(fd: int, path: str, flags: int) -> None:
    target = os.open(path, flags)
    os.dup2(target, fd)
    os.close(target)


def serve(server: MCPServer, wire: Wire) -> None:
    """Serve ``server`` over ``wire`` until stdin ends and every request has been answered."""
    # MCPServer.run("stdio") reaches its low-level server the same way; its own stdio loop is
    # what we replace, its dispatcher, session and handshake we keep.
    lowlevel: Server[Any] = server._lowlevel_server
    anyio.run(_serve, lowlevel, wire)


def exit_now() -> None:
    """End the process the moment the server is done, as a normal exit would but faster.

    Hooks wait for the process to exit (the context hook allows 3 s for all of it), and freeing
    the interpreter's heap object by object costs about half a second of CPU after the last
    answer. The exit handlers still run and the streams are flushed; only that teardown is
    skipped. Where another thread is still working, the normal exit waits for it instead.
    """
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    atexit._run_exitfuncs()  # logging's flush among them
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


async def _serve(lowlevel: Server[Any], wire: Wire) -> None:
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    exchange = Exchange()
    async with anyio.create_task_group() as tg:
        # The reader writes its own error answers through a clone: the writer ends only when
        # both the server and the reader are done with the wire.
        tg.start_soon(exchange.read, wire.stdin, to_server, server_writes.clone())
        tg.start_soon(exchange.write, wire.stdout, from_server)
        await lowlevel.run(server_reads, server_writes, lowlevel.create_initialization_options())


@dataclass
class Exchange:
    """What was asked and not yet answered, on both sides of one stdio connection."""

    unanswered: Counter[Any] = field(default_factory=Counter)  # the client's requests (duplicate ids count twice)
    server_asks: set[Any] = field(default_factory=set)  # the server's requests the client has not answered
    unwritten: set[Any] = field(default_factory=set)  # answers to requests of our own making
    opened: bool = False
    changed: anyio.Event = field(default_factory=anyio.Event)

    def _changed(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    def _settled(self) -> bool:
        # A request the server sent the client can no longer be answered once stdin has ended:
        # waiting for it would never end, so then the server is told at once (it fails that call).
        return not self.unanswered or bool(self.server_asks)

    # ---- stdin -> server --------------------------------------------------------

    async def read(
        self,
        stdin: BinaryIO,
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        errors: MemoryObjectSendStream[SessionMessage],
    ) -> None:
        async with to_server, errors:
            async with _lines_from(stdin) as lines:
                async for line in lines:
                    if not line.strip():
                        continue
                    parsed = parse(line)
                    if isinstance(parsed, types.JSONRPCError):
                        await errors.send(SessionMessage(parsed))
                        continue
                    for message in self._with_implicit_initialize(parsed):
                        self._note_inbound(message)
                        await to_server.send(SessionMessage(message))
            # stdin has ended: the server's read side stays open until every answer is out.
            while not self._settled():
                await self.changed.wait()

    def _with_implicit_initialize(self, message: types.JSONRPCMessage) -> list[types.JSONRPCMessage]:
        if self.opened or not isinstance(message, types.JSONRPCRequest):
            return [message]
        self.opened = True
        if message.method == "initialize" or _modern_envelope(message.params):
            return [message]  # a handshake, or a 2026 request that carries its own
        initialize = types.JSONRPCRequest(
            jsonrpc="2.0",
            id=IMPLICIT_INITIALIZE_ID,
            method="initialize",
            params={"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": IMPLICIT_CLIENT},
        )
        self.unwritten.add(IMPLICIT_INITIALIZE_ID)
        return [initialize, message]

    def _note_inbound(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            self.unanswered[coerce_request_id(message.id)] += 1
        elif isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self.server_asks.discard(coerce_request_id(message.id))
            self._changed()
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            # The SDK never answers a request its client cancelled: stop waiting for it.
            cancelled = (message.params or {}).get("requestId")
            if isinstance(cancelled, str | int) and not isinstance(cancelled, bool):
                self._answered(coerce_request_id(cancelled))

    def _answered(self, request_id: Any) -> None:
        if self.unanswered[request_id] > 0:
            self.unanswered[request_id] -= 1
            if not self.unanswered[request_id]:
                del self.unanswered[request_id]
            self._changed()

    # ---- server -> stdout -------------------------------------------------------

    async def write(self, stdout: BinaryIO, from_server: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with from_server:
            async for item in from_server:
                message = item.message
                answer = isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None
                key = coerce_request_id(message.id) if answer else None
                if isinstance(message, types.JSONRPCRequest):
                    self.server_asks.add(coerce_request_id(message.id))
                if key in self.unwritten:
                    self.unwritten.discard(key)
                else:
                    data = (message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()
                    await anyio.to_thread.run_sync(_write_flushed, stdout, data)
                if answer:
                    self._answered(key)  # only once it is on the wire


def _write_flushed(stdout: BinaryIO, data: bytes) -> None:
    try:
        stdout.write(data)
        stdout.flush()
    except (BrokenPipeError, ValueError):
        pass  # the client stopped reading; its answers have nowhere to go


def parse(line: bytes) -> types.JSONRPCMessage | types.JSONRPCError:
    """One line as a JSON-RPC message, or the JSON-RPC error that answers it."""
    try:
        return types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        pass
    try:
        document = json.loads(line)
    except ValueError:
        return _error(None, types.PARSE_ERROR, "Parse error: a line is not JSON")
    given = document.get("id") if isinstance(document, dict) else None
    request_id = given if isinstance(given, str | int) and not isinstance(given, bool) else None
    return _error(
        request_id,
        types.INVALID_REQUEST,
        'Invalid Request: not a JSON-RPC 2.0 message (jsonrpc "2.0", and a method or an id)',
    )


def _error(request_id: Any, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def _modern_envelope(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and types.PROTOCOL_VERSION_META_KEY in meta


def _lines_from(stdin: BinaryIO) -> MemoryObjectReceiveStream[bytes]:
    """stdin's lines (the last one with or without its ``\\n``), read by a daemon thread.

    A daemon thread, not an AnyIO worker: should the server stop before stdin ends, a read
    still blocked must not keep the process alive.
    """
    sender, receiver = anyio.create_memory_object_stream[bytes](0)
    token = anyio.lowlevel.current_token()

    def pump() -> None:
        try:
            for line in iter(stdin.readline, b""):
                anyio.from_thread.run(sender.send, line, token=token)
        except Exception:  # noqa: BLE001 - the loop is gone (or stdin failed): stop reading
            pass
        finally:
            try:
                anyio.from_thread.run_sync(sender.close, token=token)
            except Exception:  # noqa: BLE001 - the loop is gone
                pass

    threading.Thread(target=pump, name="capsule-stdin", daemon=True).start()
    return receiver


__all__ = ["Wire", "claimed_stdio", "serve", "exit_now", "parse", "IMPLICIT_INITIALIZE_ID"]
