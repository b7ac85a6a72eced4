"""A self-signed TLS front (Debian's stunnel) for a plain-HTTP server on loopback.

Used by tests/mcp/test_client_keepalive.py and scripts/bench_client_tls.py to put HTTPS in
front of a real ``capsule serve``, as API Gateway is in front of the hosted functions.
stunnel logs every accepted TCP connection and whether its TLS handshake was full or
resumed a session, which is what those count.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

ACCEPTED = "accepted connection from"
FULL_HANDSHAKE = "TLS accepted: new session negotiated"
RESUMED = "TLS accepted: previous session reused"


def stunnel_binary() -> str | None:
    return shutil.which("stunnel4") or shutil.which("stunnel")


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (openssl), valid for a day."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TlsFront:
    """stunnel on 127.0.0.1 terminating TLS for ``backend_port``; ``idle_s`` closes idle connections.

    ``handshakes=True`` logs each handshake (full or resumed) for :meth:`counts`; that logging
    costs stunnel tens of milliseconds per connection on a busy machine, so the benchmark only
    counts connections."""

    def __init__(self, backend_port: int, folder: Path, *, idle_s: int = 43200, handshakes: bool = True) -> None:
        binary = stunnel_binary()
        if binary is None:
            raise RuntimeError("stunnel is not installed (apt-get install stunnel4)")
        self.cert, key = self_signed(folder)
        self.log = folder / "stunnel.log"
        self.port = _free_port()
        config = folder / "stunnel.conf"
        config.write_text(
            "\n".join(
                [
                    "foreground = yes",
                    "pid =",
                    f"output = {self.log}",
                    f"debug = {'info' if handshakes else 'notice'}",
                    "[capsule]",
                    f"accept = 127.0.0.1:{self.port}",
                    f"connect = 127.0.0.1:{backend_port}",
                    "libwrap = no",  # no /etc/hosts.allow look-up per connection
                    f"cert = {self.cert}",
                    f"key = {key}",
                    f"TIMEOUTidle = {idle_s}",
                    "",
                ]
            )
        )
        self.process = subprocess.Popen([binary, str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_listening()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"stunnel exited with {self.process.returncode}:\n{self._text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            except OSError:
                time.sleep(0.05)
                continue
            # stunnel logs this probe's accept in its own time; wait for it, or a busy machine
            # would count it among the connections of the first test.
            self.wait_counts(connections=1)
            return
        self.stop()
        raise RuntimeError("stunnel did not start listening:\n" + self._text())

    def _text(self) -> str:
        return self.log.read_text("utf-8", "replace") if self.log.exists() else ""

    def counts(self) -> dict[str, int]:
        """TCP connections accepted so far, and how many TLS handshakes were full or resumed."""
        text = self._text()
        return {
            "connections": text.count(ACCEPTED),
            "full_handshakes": text.count(FULL_HANDSHAKE),
            "resumed": text.count(RESUMED),
        }

    def wait_counts(self, **wanted: int) -> dict[str, int]:
        """The counts once stunnel has logged at least ``wanted`` (it writes its log as it goes)."""
        deadline = time.monotonic() + 5
        while True:
            counts = self.counts()
            if all(counts[k] >= v for k, v in wanted.items()) or time.monotonic() > deadline:
                return counts
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
