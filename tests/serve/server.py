"""A real ``capsule serve`` subprocess on loopback, and a small HTTP client for it."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPSULE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "layers"), str(ROOT)])
    env["CAPSULE_EMBEDDER"] = "hashing"
    return env


def capsule(*args: str, data_dir: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "capsule_cli", *args, "--data-dir", str(data_dir)],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment(),
        timeout=120,
    )


class Reply:
    def __init__(self, status: int, headers: Any, body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<{self.status} {self.body[:300]!r}>"


class Server:
    def __init__(self, data_dir: Path, *args: str) -> None:
        self.data_dir = data_dir
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "capsule_cli",
                "serve",
                "--port",
                "0",
                "--workers",
                "2",
                "--data-dir",
                str(data_dir),
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment(),
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._ready = threading.Event()
        threading.Thread(target=self._drain, args=(self.process.stdout, self.stdout), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stderr, self.stderr), daemon=True).start()
        if not self._ready.wait(120) or not self.url:
            self.process.kill()
            raise RuntimeError("capsule serve did not start:\n" + "".join(self.stdout + self.stderr))

    url: str | None = None

    def _drain(self, stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)
            found = re.search(r"listening on (http://\S+)", line)
            if found:
                self.url = found.group(1)
                self._ready.set()
        self._ready.set()  # the process ended

    @property
    def port(self) -> int:
        return urlsplit(self.url).port

    @property
    def token(self) -> str:
        return (self.data_dir / "gateway-token").read_text().strip()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        token: str | None = "default",
    ) -> Reply:
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token == "default":
            token = self.token
        if token is not None and not any(k.lower() in ("authorization", "x-api-key") for k in sent):
            sent["Authorization"] = f"Bearer {token}"
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=data if (data or method in ("POST", "PUT")) else None, headers=sent)
            response = connection.getresponse()
            return Reply(response.status, response.headers, response.read())  # names in any case
        finally:
            connection.close()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)
