"""The warm route's HTTP client (mcp_client.loopback_http) against real sockets on loopback: the
responses uvicorn sends (Content-Length, chunked, to the end), and what counts as not sent."""

from __future__ import annotations

import socket
import threading

import pytest

from capsule.core import errors
from mcp_client import local_server, loopback_http


def one_reply(reply: bytes) -> tuple[int, list[bytes]]:
    """A listening socket that answers one request with ``reply`` (in pieces) and closes;
    returns its port and, once served, the request it read."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                while len(body) < length:
                    body += conn.recv(65536)
                seen.append(head + b"\r\n\r\n" + body)
                try:
                    for i in range(0, len(reply), 7):  # in small pieces: the reader must reassemble
                        conn.sendall(reply[i : i + 7])
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a client may hang up once it sees the reply is not HTTP (an SSH banner)

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], seen


def exchange(port: int, body: bytes | None = b'{"q": 1}') -> tuple[int, bytes]:
    return loopback_http.exchange(
        "127.0.0.1", port, "POST", "/v1/x", {"Authorization": "Bearer t"}, body, connect_timeout_s=5.0, timeout_s=30.0
    )


def test_a_content_length_response_and_the_request_sent():
    port, seen = one_reply(
        b"HTTP/1.1 201 Created\r\nContent-Length: 12\r\nContent-Type: application/json\r\n"
        b'\r\n{"ok": true}trailing bytes not read'
    )
    assert exchange(port) == (201, b'{"ok": true}')
    request = seen[0]
    assert request.startswith(b"POST /v1/x HTTP/1.1\r\n")
    assert b"\r\nConnection: close\r\n" in request and b"\r\nAuthorization: Bearer t\r\n" in request
    assert b"\r\nContent-Length: 8\r\n" in request and request.endswith(b'\r\n\r\n{"q": 1}')


def test_a_chunked_response():
    port, _ = one_reply(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\n\r\n"
    )
    assert exchange(port) == (200, b"hello world")


def test_a_response_without_length_is_read_to_the_end():
    port, _ = one_reply(b"HTTP/1.0 200 OK\r\n\r\nall of it")
    assert exchange(port, body=None) == (200, b"all of it")


@pytest.mark.parametrize(
    "reply",
    [
        b"",
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
def test_what_is_not_an_http_response_is_unavailable_after_sending(reply):
    port, _ = one_reply(reply)
    server = local_server.LocalServer(f"http://127.0.0.1:{port}", "t", {"search": ["POST", "/v1/memories/search"]})
    with pytest.raises(errors.Unavailable):  # sent: the caller must not run it again embedded
        server.call("search", {"query": "x"})


def test_a_refused_connection_is_not_answering():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(loopback_http.ConnectFailed):
        exchange(port)
    with pytest.raises(local_server.NotAnswering):
        local_server.LocalServer(f"http://127.0.0.1:{port}", "t").call("search", {"query": "x"})
