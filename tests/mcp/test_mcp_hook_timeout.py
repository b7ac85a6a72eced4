"""A hook Claude Code ends at its timeout loses no memory: each write is in the spool while it is
sent, and a later run delivers what an ended run was sending."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from mcp_support import capsule_command, capsule_env, hook_input, new_data_dir

from capsule import Settings
from mcp_client.backends import EmbeddedBackend
from mcp_client.spool import INFLIGHT_STALE_S, Spool

PROJECT = "shop"  # the recorded cwd /home/dev/shop, by its folder name


def stored(data_dir: Path) -> list:
    backend = EmbeddedBackend.from_settings(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        return backend.list_memories({"project": PROJECT, "limit": 100}).memories
    finally:
        backend.close()


def test_a_hook_killed_while_sending_loses_no_memory(tmp_path):
    data_dir = new_data_dir(tmp_path)
    with socket.socket() as silent:  # takes the connection, never answers: the hook waits on it
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        silent.settimeout(60)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        hook = subprocess.Popen(
            capsule_command("hook", "stop"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=capsule_env(data_dir, CAPSULE_MEMORY_URL=url, CAPSULE_AUTH="none"),
        )
        hook.stdin.write(hook_input("stop.json"))
        hook.stdin.close()
        connection, _ = silent.accept()  # the first digest is on its way
        hook.send_signal(signal.SIGKILL)  # as a timeout ends it: no chance to clean up
        hook.wait(30)
        connection.close()
    hook.stdout.close()
    hook.stderr.close()
    assert stored(data_dir) == []

    spool = Spool(data_dir / "hook-spool")
    kept = sorted(spool.folder.glob("*.inflight"))
    assert len(kept) == 2  # both digests: the one being sent, and the one it had not reached
    assert spool.pending() == []  # too fresh: their run might still be sending them
    old = time.time() - INFLIGHT_STALE_S - 1
    for path in kept:
        os.utime(path, (old, old))  # a later run, after any hook's timeout
    assert spool.pending() == kept

    back = subprocess.run(
        capsule_command("hook", "post-compact"),
        input=hook_input("post_compact.json"),
        capture_output=True,
        text=True,
        env=capsule_env(data_dir),
        timeout=120,
    )
    assert back.returncode == 0 and "delivered 2 write(s) kept by earlier runs" in back.stderr, back.stderr
    types = sorted(m.meta["type"] for m in stored(data_dir))
    assert types == ["compaction-summary", "digest", "digest"]  # nothing the killed run held was lost
    assert list(spool.folder.glob("*.inflight")) == list(spool.folder.glob("*.json")) == []


def test_a_delivered_write_leaves_nothing_in_the_spool(tmp_path):
    data_dir = new_data_dir(tmp_path)
    done = subprocess.run(
        capsule_command("hook", "stop"),
        input=hook_input("stop.json"),
        capture_output=True,
        text=True,
        env=capsule_env(data_dir),
        timeout=120,
    )
    assert done.returncode == 0 and "2 stored" in done.stderr, done.stderr
    assert list((data_dir / "hook-spool").glob("*")) == []
