"""One HTTP/1.1 exchange with the ``capsule serve`` on this machine, over a plain socket.

The warm route (:mod:`mcp_client.local_server`) is what a hook or ``capsule search`` runs when
a server is up, and its start-up is the command's whole cost: :mod:`http.client` alone brings
:mod:`email`, :mod:`ssl` and most of their imports (about as much CPU as the rest of the
command). A loopback request to our own server needs none of that: one request with
``Connection: close``, one response read to its ``Content-Length`` (or chunked, or to the end).
"""

from __future__ import annotations

import socket

MAX_HEADER_BYTES = 64 * 1024


class ConnectFailed(OSError):
    """Nothing was sent: the server did not take the connection."""


class BadReply(OSError):
    """The request was sent, and what came back is not an HTTP response."""


def exchange(
    host: str,
    port: int,
    method: str,
    path: str,
    headers: dict,
    body: bytes | None,
    *,
    connect_timeout_s: float,
    timeout_s: float,
) -> tuple[int, bytes]:
    """(status, body) of one request. :class:`ConnectFailed` before anything was sent; any
    other :class:`OSError` (a timeout, a reset, :class:`BadReply`) after."""
    status, _, data = round_trip(
        host, port, method, path, headers, body, connect_timeout_s=connect_timeout_s, timeout_s=timeout_s
    )
    return status, data


def round_trip(
    host: str,
    port: int,
    method: str,
    path: str,
    headers: dict,
    body: bytes | None,
    *,
    connect_timeout_s: float,
    timeout_s: float,
) -> tuple[int, dict[str, str], bytes]:
    """(status, header fields by lower-case name, body) of one request, raising as :func:`exchange`
    does: for a caller that reads a header too (the export's next-page cursor)."""
    try:
        # an ASCII host as bytes: getaddrinfo would import the idna codec to encode a str
        sock = socket.create_connection((_ascii(host), port), timeout=connect_timeout_s)
    except OSError as exc:
        raise ConnectFailed(str(exc)) from exc
    with sock:
        sock.settimeout(timeout_s)
        sock.sendall(_request(host, port, method, path, headers, body))
        return _response(sock, head_only=method == "HEAD")


def _ascii(host: str) -> str | bytes:
    return host.encode("ascii") if host.isascii() else host


def _request(host: str, port: int, method: str, path: str, headers: dict, body: bytes | None) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: {host}:{port}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


def _response(sock: socket.socket, *, head_only: bool) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk or len(data) > MAX_HEADER_BYTES:
            raise BadReply("the server closed the connection before a complete response head")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    status, fields = _head(head)
    if head_only or status in (204, 304) or 100 <= status < 200:
        return status, fields, b""
    if fields.get("transfer-encoding", "").lower() == "chunked":
        return status, fields, _dechunk(sock, rest)
    length = fields.get("content-length")
    return status, fields, _read_length(sock, rest, int(length)) if length is not None else _read_all(sock, rest)


def _head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise BadReply(f"not an HTTP response: {lines[0][:80]!r}")
    fields = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    if "content-length" in fields and not fields["content-length"].isdigit():
        raise BadReply(f"bad Content-Length: {fields['content-length'][:40]!r}")
    return int(parts[1]), fields


def _read_length(sock: socket.socket, data: bytes, length: int) -> bytes:
    while len(data) < length:
        chunk = sock.recv(max(65536, length - len(data)))
        if not chunk:
            raise BadReply(f"the response ended after {len(data)} of {length} bytes")
        data += chunk
    return data[:length]


def _read_all(sock: socket.socket, data: bytes) -> bytes:
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _dechunk(sock: socket.socket, data: bytes) -> bytes:
    body = b""
    while True:
        while b"\r\n" not in data:
            data = _more(sock, data)
        size_line, data = data.split(b"\r\n", 1)
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BadReply(f"bad chunk size: {size_line[:40]!r}") from None
        if size == 0:
            return body  # trailers, if any, are not read: the connection closes
        while len(data) < size + 2:
            data = _more(sock, data)
        body, data = body + data[:size], data[size + 2 :]


def _more(sock: socket.socket, data: bytes) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise BadReply("the response ended inside a chunk")
    return data + chunk


__all__ = ["BadReply", "ConnectFailed", "exchange", "round_trip"]
