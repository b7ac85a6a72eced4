"""Shared pieces of the MCP tests: the environment a ``capsule`` subprocess runs with.

(No ``__init__.py`` in tests/mcp: a package named ``mcp`` would shadow the SDK.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"

# A recurring error and the solution (fixpack) that fixes it, for the learning tools.
ERROR = "Error: connect ECONNREFUSED 127.0.0.1:6379 while starting the worker queue"
FIXPACK = {
    "title": "Point REDIS_URL at the private host",
    "description": "Redis refuses connections on the public host inside the private network.",
    "category": "network",
    "signatures": [{"text": "connect ECONNREFUSED 127.0.0.1:6379", "regexes": [r"ECONNREFUSED\s+\S*:6379"]}],
    "steps": [
        {
            "step_order": 1,
            "kind": "patch",
            "description": "use the private host",
            "payload": {
                "file": ".env",
                "search": "REDIS_URL=redis://localhost",
                "replace": "REDIS_URL=redis://redis.internal",
            },
        },
        {"step_order": 2, "kind": "cmd", "payload": {"command": "npm run worker"}},
    ],
    "checks": [{"check_order": 1, "cmd": "redis-cli -h redis.internal ping", "expect_substring": "PONG"}],
}


def capsule_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """A clean environment: our code on PYTHONPATH, the offline hashing embedder, a temp store,
    and no AWS settings from the machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CAPSULE_")) and k != "PYTHONPATH"}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(ROOT / "layers"), str(ROOT)]),
            "CAPSULE_EMBEDDER": "hashing",
            "CAPSULE_DATA_DIR": str(data_dir),
            "AWS_CONFIG_FILE": str(data_dir / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(data_dir / "no-aws-credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "CAPSULE_MCP_TOOLS": "all",  # every tool and argument listed; tests/mcp/test_vb_contract.py checks the default
        }
    )
    env.update(extra)
    return env


def capsule_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "capsule_cli", *args]


def hook_input(name: str) -> str:
    """A recorded hook input, pointed at the sample transcript."""
    text = (FIXTURES / name).read_text("utf-8")
    return text.replace("{transcript}", json.dumps(str(FIXTURES / "transcript.jsonl"))[1:-1])


def new_data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "capsule-data"
    folder.mkdir(exist_ok=True)
    return folder


class ToolSession:
    """An MCP client session (the SDK's own ``Client``) over stdio to a ``capsule mcp`` subprocess."""

    def __init__(self, client) -> None:
        self.client = client

    async def call(self, name: str, arguments: dict | None = None):
        """(structured content, text, is_error) of one tool call."""
        result = await self.client.call_tool(name, arguments or {})
        text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
        return result.structured_content, text, bool(result.is_error)

    async def ok(self, name: str, arguments: dict | None = None):
        structured, text, is_error = await self.call(name, arguments)
        assert not is_error, f"{name} failed: {text}"
        return structured, text


def mcp_params(data_dir: Path, *args: str, **env: str):
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "capsule_cli", "mcp", *args],
        env=capsule_env(data_dir, **env),
        cwd=str(ROOT),
    )


@contextmanager
def signing_serve(folder: Path, access_key: str, secret: str, tenant: str, region: str):
    """A live ``capsule serve`` (one worker) that verifies SigV4 for one key, plus one API key:
    yields ``{"url", "port", "api_key", "data_dir"}`` and stops the server after."""
    data_dir = new_data_dir(folder)
    env = capsule_env(data_dir)
    subprocess.run(
        capsule_command("keys", "add-sigv4", access_key, "--secret", secret, "--tenant", tenant),
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    made = subprocess.run(
        capsule_command("keys", "create", "agent", "--json"),
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    process = subprocess.Popen(
        capsule_command("serve", "--port", "0", "--workers", "1", "--region", region),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = _wait_for_url(process)
        yield {
            "url": url,
            "port": int(url.rsplit(":", 1)[1].strip("/")),
            "api_key": json.loads(made.stdout)["key"],
            "data_dir": data_dir,
        }
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


def _wait_for_url(process: subprocess.Popen) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            raise RuntimeError(f"capsule serve exited with {process.returncode}")
        if "listening on " in line:
            return line.split("listening on ", 1)[1].split()[0]
    raise RuntimeError("capsule serve did not start")
