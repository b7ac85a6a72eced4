"""``capsule serve > log 2>&1``: the start-up banner comes before the first request's line, even
for a client that sends its request the moment the port accepts connections."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time

import pytest

from .server import environment

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthz(port: int) -> int | None:
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/healthz")
        return connection.getresponse().status
    except OSError:
        return None


def test_the_banner_is_flushed_before_the_first_request_line(tmp_path):
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:  # one file for both streams, as a shell redirection makes it
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "capsule_cli",
                "serve",
                "--port",
                str(port),
                "--workers",
                "2",
                "--data-dir",
                str(tmp_path / "data"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environment(),
        )
    try:
        deadline = time.monotonic() + 120
        while _healthz(port) != 200:
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.01)
        while "/healthz" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        process.terminate()
        process.wait(60)
    lines = log.read_text().splitlines()
    banner = next(i for i, line in enumerate(lines) if "listening on" in line)
    request = next(i for i, line in enumerate(lines) if "/healthz" in line)
    assert banner < request, "\n".join(lines)
