"""A stand-in for the Voyage and OpenAI embedding APIs: a real HTTP/1.1 server on loopback.

``FakeProvider("voyage", key)`` answers ``POST /v1/embeddings`` as Voyage does and
``FakeProvider("openai", key)`` as OpenAI does (``FakeProvider(None)`` checks only ``input`` and
``model``, for tests of the transport itself). Each request must carry ``Authorization: Bearer
KEY`` and the fields its provider requires (Voyage: ``input``, ``model``, ``input_type``; OpenAI:
``input``, ``model``, ``encoding_format``), else it is refused as the provider refuses it (401,
400). The answer is ``{"object": "list", "data": [{"object": "embedding", "embedding", "index"}],
"model", "usage"}`` with the items in reverse order (a provider may answer in any order), and
vectors hashed from the words, of the model's dimensions: the same words give the same vector,
shared words make vectors close.

Failures on demand: ``script`` answers the next requests (a status, ``(status, headers)`` or
``CLOSE``: the connection closed with no answer), ``failing`` answers every request until it is
set back to None. ``calls`` logs each request (path, auth, body, status); ``connections``
counts the connections accepted.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CLOSE = "close"  # close the connection without answering, as a host going away does
Answer = int | tuple[int, dict] | str

MODELS = {
    "voyage": {"voyage-3.5": 1024, "voyage-3.5-lite": 1024, "voyage-3-large": 1024},
    "openai": {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072},
}
REQUIRED = {
    "voyage": ("input", "model", "input_type"),
    "openai": ("input", "model", "encoding_format"),
    None: ("input", "model"),
}
ALLOWED = {"voyage": {"input_type": (None, "query", "document")}, "openai": {"encoding_format": ("float",)}}


def hashed_vectors(texts: list[str], dims: int) -> list[list[float]]:
    """Each word adds +-1 at a place its hash picks (the hashing trick)."""
    rows = []
    for text in texts:
        row = [0.0] * dims
        for word in re.findall(r"\w+", text.lower()):
            n = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            row[n % dims] += 1.0 if n >> 63 else -1.0
        if not any(row):
            row[0] = 1.0  # a text without words still gets a vector
        rows.append(row)
    return rows


class FakeProvider(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        flavor: str | None = None,
        api_key: str | None = None,
        *,
        dims: int = 8,
        vectors: Callable[[list[str], int], list[list[float]]] = hashed_vectors,
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.flavor, self.api_key, self.dims, self.vectors = flavor, api_key, dims, vectors
        self.calls: list[dict[str, Any]] = []
        self.connections = 0
        self.script: list[Answer] = []
        self.failing: Answer | None = None
        self.delay_s = 0.0
        self.drop_after_answer = False  # close after each answer without saying so (an idle timeout)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> FakeProvider:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def handle_error(self, request, client_address) -> None:
        pass  # a client that gave up (a timeout) leaves a broken pipe: expected

    def next_answer(self) -> Answer:
        if self.script:
            return self.script.pop(0)
        return self.failing if self.failing is not None else 200

    def refusal(self, body: Any, auth: str | None) -> tuple[int, str] | None:
        """What the provider would refuse in this request, as (status, message)."""
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return 401, "Provided API key is invalid."
        if not isinstance(body, dict):
            return 400, "the body is not a JSON object"
        missing = [f for f in REQUIRED[self.flavor] if f not in body]
        if missing:
            return 400, f"missing field: {missing[0]}"
        texts = body["input"]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            return 400, "input must be a non-empty list of non-empty strings"
        for field, allowed in ALLOWED.get(self.flavor, {}).items():
            if body[field] not in allowed:
                return 400, f"{field} must be one of {allowed}"
        if self.flavor is not None and body["model"] not in MODELS[self.flavor]:
            return 400, f"model {body['model']!r} is not supported"
        return None

    def answer(self, body: dict) -> dict:
        texts = body["input"]
        dims = MODELS[self.flavor][body["model"]] if self.flavor else self.dims
        data = [
            {"object": "embedding", "embedding": row, "index": i} for i, row in enumerate(self.vectors(texts, dims))
        ]
        tokens = sum(len(t.split()) for t in texts)
        usage = {"total_tokens": tokens}
        if self.flavor == "openai":
            usage["prompt_tokens"] = tokens
        return {"object": "list", "data": data[::-1], "model": body["model"], "usage": usage}

    def error(self, message: str) -> dict:
        if self.flavor == "openai":
            return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
        return {"detail": message}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    server: FakeProvider

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        call = {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        self.server.calls.append(call)
        time.sleep(self.server.delay_s)
        answer = self.server.next_answer()
        if answer == CLOSE:
            call["status"] = None
            self.close_connection = True
            return
        status, headers = answer if isinstance(answer, tuple) else (answer, {})
        if status == 200 and self.path != "/v1/embeddings":
            status, payload = 404, self.server.error(f"no route {self.path}")
        elif status == 200 and (refused := self.server.refusal(body, call["auth"])):
            status, payload = refused[0], self.server.error(refused[1])
        elif status == 200:
            payload = self.server.answer(body)
        else:
            payload = self.server.error(f"status {status} from the fake provider")
        call["status"] = status
        self._send(status, payload, headers)

    def _send(self, status: int, payload: dict, headers: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        if self.server.drop_after_answer:
            self.close_connection = True


__all__ = ["CLOSE", "FakeProvider", "MODELS", "hashed_vectors"]
