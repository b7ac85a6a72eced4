"""HTTP as clients expect it, against a real ``capsule serve`` on loopback: connections reused,
405 with Allow, 400 for broken framing, JSON (never HTML) for every error, a deep backlog,
liveness without credentials, slow clients that hold nobody up, private database files."""

import http.client
import json
import signal
import socket
import stat
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from .server import Server


def raw(server, data: bytes, timeout: float = 10) -> bytes:
    """Send bytes as they are and read the answer until the server closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(data)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except TimeoutError:
            pass
    return answer


def split(answer: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def assert_json_error(status: int, headers, body: bytes, code: str | None = None) -> dict:
    assert headers["content-type"].startswith("application/json"), (status, headers, body)
    assert b"<html" not in body.lower() and b"<!doctype" not in body.lower()
    error = json.loads(body)["error"]
    assert set(error) == {"code", "message", "details"} and error["message"]
    if code:
        assert error["code"] == code
    return error


def test_one_keep_alive_connection_carries_many_requests(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    try:
        connection.connect()
        sock = connection.sock
        for i in range(20):
            body = json.dumps({"project": "reuse", "content": f"kept alive {i}"})
            connection.request("POST", "/v1/memories", body=body, headers=headers)
            response = connection.getresponse()
            assert response.status == 201 and response.getheader("connection") != "close"
            response.read()
            connection.request(
                "POST", "/v1/memories/search", body=json.dumps({"project": "reuse", "query": "kept"}), headers=headers
            )
            response = connection.getresponse()
            assert response.status == 200 and response.read()
            assert connection.sock is sock  # the same socket: http.client reconnects silently otherwise
    finally:
        connection.close()


@pytest.mark.parametrize(
    "method,path,allowed",
    [
        ("PATCH", "/v1/memories", "GET, HEAD, POST"),
        ("TRACE", "/v1/memories", "GET, HEAD, POST"),
        ("PUT", "/v1/memories/abc", "DELETE, GET, HEAD, PATCH"),
        ("GET", "/v1/memories/search", "POST"),  # its own resource, as the document says, not an {id}
        ("OPTIONS", "/v1/solutions/import", "POST"),
        ("DELETE", "/v1/projects", "GET, HEAD"),
        ("POST", "/healthz", "GET, HEAD"),
        ("DELETE", "/ui", "GET, HEAD"),
        ("TRACE", "/openapi.json", "GET, HEAD"),
    ],
)
def test_a_wrong_method_on_a_known_path_is_405_with_allow(server, method, path, allowed):
    r = server.request(method, path)
    assert r.status == 405, r
    assert r.headers["Allow"] == allowed
    error = assert_json_error(r.status, {"content-type": r.headers["Content-Type"]}, r.body, "method_not_allowed")
    assert method in error["message"]


def test_trace_and_unknown_paths_answer_json_never_html(server):
    for method, path, status in [
        ("TRACE", "/", 404),
        ("TRACE", "/nothing", 404),
        ("GET", "/v2/x", 404),
        ("BREW", "/v1/memories", 400),
    ]:  # the parser knows no such method
        r = server.request(method, path, token=None)
        assert r.status == status, (method, path, r)
        assert_json_error(r.status, {"content-type": r.headers["Content-Type"]}, r.body)


@pytest.mark.parametrize("length", [b"-5", b"abc", b"1.5", b"0x10", b"5, 6"])
def test_a_malformed_content_length_is_400_json(server, length):
    answer = raw(
        server,
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + length + b"\r\n\r\n{}",
    )
    status, headers, body = split(answer)
    assert status == 400, answer
    assert_json_error(status, headers, body, "bad_request")
    assert headers["connection"] == "close"


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /v1/health HTTP/1.1\r\nHost x\r\n\r\n",  # a header without a colon
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # bad chunk size
    ],
)
def test_broken_framing_is_400_json(server, request_bytes):
    status, headers, body = split(raw(server, request_bytes))
    assert status == 400
    assert_json_error(status, headers, body, "bad_request")


def test_a_body_over_the_limit_is_413_json_and_a_chunked_body_is_read(server):
    from capsule.core import limits

    big = b"x" * (limits.MAX_BODY_BYTES + 1)
    status, headers, body = split(
        raw(
            server,
            b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + server.token.encode()
            + b"\r\nContent-Length: "
            + str(len(big)).encode()
            + b"\r\n\r\n"
            + big,
        )
    )
    assert status == 413
    assert_json_error(status, headers, body, "payload_too_large")
    payload = json.dumps({"project": "chunked", "content": "sent in chunks"}).encode()
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (payload[:10], payload[10:])) + b"0\r\n\r\n"
    status, _, body = split(
        raw(
            server,
            b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + server.token.encode()
            + b"\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked,
        )
    )
    assert status == 201, body


def test_healthz_needs_no_credentials_and_v1_health_still_does(server):
    r = server.request("GET", "/healthz", token=None)
    assert r.status == 200 and r.json == {"status": "ok"}
    head = server.request("HEAD", "/healthz", token=None)
    assert head.status == 200 and head.body == b""
    assert server.request("GET", "/v1/health", token=None).status == 401
    assert server.request("GET", "/v1/health").status == 200


def test_head_is_get_without_the_body(server):
    got = server.request("GET", "/openapi.json", token=None)
    head = server.request("HEAD", "/openapi.json", token=None)
    assert head.status == 200 and head.body == b""
    assert head.headers["Content-Length"] == str(len(got.body))


@pytest.mark.parametrize("clients", [16, 256])
def test_many_simultaneous_connects_all_succeed(server, clients):
    """Every client connects first (the kernel's backlog holds them), then all send at once."""
    barrier = threading.Barrier(clients)

    def one(_):
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
            barrier.wait(60)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
            return split(answer)[0]

    with ThreadPoolExecutor(clients) as pool:
        statuses = list(pool.map(one, range(clients)))
    assert statuses == [200] * clients


def test_the_database_and_its_wal_are_private(server):
    assert server.request("POST", "/v1/memories", {"project": "modes", "content": "written"}).status == 201
    files = [p for p in server.data_dir.iterdir() if p.name.startswith("capsule.db")]
    assert {p.name for p in files} >= {"capsule.db", "capsule.db-wal"}
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_slow_clients_hold_nobody_up(server):
    """Clients that send half a request line, half the headers, or a body a byte at a time
    occupy no worker: others are answered meanwhile (2 workers, 6 slow connections)."""
    slow = []
    try:
        for partial in (
            b"POST /v1/mem",
            b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ",
            b'POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"pro',
        ) * 2:
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            sock.sendall(partial)
            slow.append(sock)
        for i in range(10):
            r = server.request("POST", "/v1/memories", {"project": "beside-slow", "content": f"not held up {i}"})
            assert r.status == 201, r
    finally:
        for sock in slow:
            sock.close()


def test_sigterm_drains_even_with_a_client_stalled_mid_body(tmp_path):
    """A request still receiving its body is refused (503) when the server stops, so a
    stalled client cannot hold the shutdown; a request being handled finishes."""
    server = Server(tmp_path)
    try:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
        sock.sendall(
            b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + server.token.encode()
            + b'\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"project"'
        )
        time.sleep(1)  # the worker has the request and waits for the rest of the body
        started = time.monotonic()
        code = server.stop(signal.SIGTERM, timeout=60)
        elapsed = time.monotonic() - started
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
        sock.close()
    finally:
        if server.process.poll() is None:
            server.process.kill()
    assert code == 0, "".join(server.stderr)
    status, headers, body = split(answer)
    assert status == 503 and headers.get("retry-after") == "1"
    assert_json_error(status, headers, body, "unavailable")
    assert elapsed < 30  # well before the 60 s a request in flight may take (a bound, not a speed claim)


def test_headers_without_end_are_refused_431_json(server):
    """The parser sets no bound on a request's head: a client sending headers without end is cut off."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        answer = b""
        try:
            for _ in range(40):
                sock.sendall(b"X-Pad: " + b"a" * 4000 + b"\r\n")
                time.sleep(0.01)
        except OSError:  # refused and closed while still sending
            pass
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except OSError:
            pass
    status, headers, body = split(answer)
    assert status == 431
    assert_json_error(status, headers, body, "headers_too_large")


def _data_segments_in(sock: socket.socket) -> int:
    """Linux's tcpi_data_segs_in (struct tcp_info, offset 152): data segments this socket received."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return int.from_bytes(info[152:156], "little")


@pytest.mark.skipif(not hasattr(socket, "TCP_INFO"), reason="TCP_INFO is Linux's")
def test_a_keep_alive_answer_arrives_in_one_segment(server):
    """Head and body in one write: a second segment is a second wake-up of the client (and,
    before TCP_NODELAY, the 40 ms wait for a delayed ACK)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    try:
        connection.request("GET", "/healthz")
        connection.getresponse().read()
        counts = []
        for i in range(5):
            before = _data_segments_in(connection.sock)
            connection.request(
                "POST", "/v1/memories", body=json.dumps({"project": "seg", "content": f"one {i}"}), headers=headers
            )
            response = connection.getresponse()
            assert response.status == 201
            response.read()
            counts.append(_data_segments_in(connection.sock) - before)
    finally:
        connection.close()
    assert counts == [1] * 5
