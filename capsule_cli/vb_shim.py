"""``capsule install vector-bridge``: Capsule Memory where the Vector Bridge's hooks look for it.

The Vector Bridge's own Claude Code hooks launch ``node ~/.claude/mcp-servers/vector-bridge/dist/index.js``
(COMPAT §3.1). Writing a small script there that runs ``capsule mcp --embedded`` lets those hooks,
and any MCP config that names that file, work unchanged: stdin, stdout and stderr pass straight
through, and the script exits with capsule's exit code. An existing Vector Bridge build there is
kept beside it (``index.js.vector-bridge``), never overwritten silently.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

RELATIVE = Path(".claude") / "mcp-servers" / "vector-bridge" / "dist" / "index.js"
MARK = "// capsule-memory: stands in for the Vector Bridge"


def shim_text(command: list[str]) -> str:
    """The Node script: run ``command`` with the hooks' stdio, exit with its code."""
    return "\n".join(
        [
            "#!/usr/bin/env node",
            MARK,
            "// Written by `capsule install vector-bridge`; the Vector Bridge's hooks launch this file.",
            'const { spawnSync } = require("child_process");',
            f"const command = {json.dumps(command)};",
            'const run = spawnSync(command[0], command.slice(1), { stdio: "inherit" });',
            'if (run.error) { process.stderr.write(String(run.error) + "\\n"); process.exit(1); }',
            "process.exit(run.status === null ? 1 : run.status);",
            "",
        ]
    )


def write_shim(home: Path, command: list[str]) -> tuple[Path, Path | None]:
    """Write the script under ``home``: (its path, where a Vector Bridge build found there was moved)."""
    target = home / RELATIVE
    target.parent.mkdir(parents=True, exist_ok=True)
    kept = None
    if target.exists() and MARK not in target.read_text("utf-8", errors="replace"):
        kept = target.with_name(target.name + ".vector-bridge")
        os.replace(target, kept)
    target.write_text(shim_text(command), "utf-8")
    target.chmod(0o755)
    return target, kept


def cmd_vector_bridge(args: argparse.Namespace) -> None:
    command = [*args.capsule_command(), "mcp", "--embedded"]
    if args.data_dir:
        command += ["--data-dir", os.path.abspath(args.data_dir)]
    target, kept = write_shim(Path(args.home).expanduser() if args.home else Path.home(), command)
    print(f"wrote {target}: the Vector Bridge's hooks now run {' '.join(command)}", file=sys.stderr)
    if kept:
        print(f"the Vector Bridge build that was there is kept as {kept}", file=sys.stderr)


def register(sub: argparse._SubParsersAction, capsule_command: Callable[[], list[str]]) -> None:
    """Under ``capsule install``; ``capsule_command`` says how to start capsule (:mod:`.install`'s)."""
    q = sub.add_parser("vector-bridge", help="stand in for the Vector Bridge where its hooks launch it")
    q.add_argument("--home", help="the home folder to write under (default: yours)")
    q.add_argument("--data-dir", help="embedded: data folder")
    q.set_defaults(run=cmd_vector_bridge, capsule_command=capsule_command)


__all__ = ["register", "write_shim", "shim_text", "RELATIVE"]
