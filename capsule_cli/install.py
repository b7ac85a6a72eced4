"""``capsule install claude-desktop|claude-code``: print, or merge with ``--write``, the config
that connects Claude to Capsule Memory.

Merging never clobbers: other MCP servers and other hooks are kept, a hook already present is
not added twice, and a config file that is not valid JSON is refused (nothing is written).
The previous file is kept beside the new one as ``<name>.bak``.

The project (issue 30): Claude Desktop starts its servers in ``/`` or the home folder, which name
no project, so its config names one: ``--project``, else :data:`DESKTOP_PROJECT`. Claude Code
starts the server and the hooks in the checkout, so its config names none unless ``--project``
is given: the default rule (``mcp_client.project_name``) then gives the checkout's full path, as
a committed ``.mcp.json`` must not name one machine's folders; the command says which project
that is. A root or home folder is refused as ``--project``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from capsule.core.errors import InvalidInput

from . import vb_shim

SERVER_NAME = "capsule-memory"
DESKTOP_PROJECT = "desktop"  # Claude Desktop's memories, when --project names none
# Claude Code hook event -> (matcher, hook command argument, timeout in seconds)
HOOKS: dict[str, tuple[str | None, str, int]] = {
    "Stop": (None, "stop", 30),
    "PostCompact": ("", "post-compact", 30),
    "PreToolUse": ("Task|Agent", "pre-tool-use", 15),
}


def capsule_command(*, portable: bool = False) -> list[str]:
    """How to start ``capsule``: the installed script, else this Python with ``-m capsule_cli``.

    ``portable`` (Claude Code's files, which a team commits): the bare ``capsule`` whenever it is
    on PATH, so the file names no one's home folder or virtualenv. Claude Desktop does not see
    the shell's PATH, so its config gets the script's full path."""
    script = shutil.which("capsule")
    if script:
        return ["capsule"] if portable else [os.path.abspath(script)]
    return [sys.executable, "-m", "capsule_cli"]


def not_portable_note() -> str | None:
    if shutil.which("capsule"):
        return None
    return (
        f"capsule: note: 'capsule' is not on PATH, so this names {sys.executable} (fine on this machine,"
        " not in a committed file): install it with 'pipx install -e .'"
        " or activate the virtualenv, and run this again to write the portable 'capsule'"
    )


def project_option(value: str) -> str:
    """``--project``: a name, or a folder made canonical here; never the root or the home folder."""
    from mcp_client.project_name import canonical_folder, client_project, is_path

    name = client_project(value)
    if not name:
        raise argparse.ArgumentTypeError("a project needs a name")
    if is_path(name) and name in _not_projects():
        raise argparse.ArgumentTypeError(
            f"{value!r} is the root or the home folder, which is no project: give a "
            "name (--project notes) or a checkout's folder"
        )
    return name if not is_path(name) else canonical_folder(name)


def _not_projects() -> set[str]:
    from mcp_client.project_name import canonical_folder

    home = os.environ.get("HOME") or os.path.expanduser("~")
    return {"/", canonical_folder(home)} if home and home != "~" else {"/"}


def project_of(args: argparse.Namespace, *, code: bool) -> str | None:
    """The project the config names: --project; Claude Desktop's own name; for Claude Code none."""
    return args.project or (None if code else DESKTOP_PROJECT)


def code_project(args: argparse.Namespace) -> str:
    """Where Claude Code's memories go: --project, else the checkout of --dir as the default rule
    names it from there (its git repository's top folder as a full path)."""
    from mcp_client.project_name import default_project

    if args.project:
        return args.project
    return default_project(
        {k: v for k, v in os.environ.items() if k != "CAPSULE_PROJECT"}, cwd=Path(args.dir).resolve()
    )


def server_entry(args: argparse.Namespace, *, code: bool) -> dict[str, Any]:
    command = capsule_command(portable=code)
    mcp_args = [*command[1:], "mcp"]
    env = {
        name: value
        for name, value in [
            ("CAPSULE_MEMORY_URL", args.url),
            ("CAPSULE_AUTH", args.auth),
            ("AWS_PROFILE", args.profile),
            ("AWS_REGION", args.region),
            ("CAPSULE_DATA_DIR", args.data_dir),
            ("CAPSULE_PROJECT", project_of(args, code=code)),
        ]
        if value
    }
    entry: dict[str, Any] = {"command": command[0], "args": mcp_args}
    if code:
        entry = {"type": "stdio", **entry}
    if env:
        entry["env"] = env
    return entry


def hooks_config(environ_prefix: str = "") -> dict[str, Any]:
    command = shlex.join(capsule_command(portable=True))
    hooks: dict[str, Any] = {}
    for event, (matcher, name, timeout) in HOOKS.items():
        group: dict[str, Any] = {
            "hooks": [{"type": "command", "command": f"{environ_prefix}{command} hook {name}", "timeout": timeout}]
        }
        if matcher is not None:
            group = {"matcher": matcher, **group}
        hooks[event] = [group]
    return {"hooks": hooks}


def _env_prefix(args: argparse.Namespace) -> str:
    """Hooks run in the agent's environment: name the memory in the command when given."""
    pairs = [
        ("CAPSULE_MEMORY_URL", args.url),
        ("CAPSULE_AUTH", args.auth),
        ("AWS_PROFILE", args.profile),
        ("AWS_REGION", args.region),
        ("CAPSULE_DATA_DIR", args.data_dir),
    ]
    return "".join(f"{name}={shlex.quote(value)} " for name, value in pairs if value)


# ---- merging ------------------------------------------------------------------------------


def read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text("utf-8") or "{}")
    except ValueError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON ({exc}); fix it first — nothing was written", field="config"
        ) from exc
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; nothing was written", field="config")
    return data


def merge_server(config: dict[str, Any], entry: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    servers = config.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise InvalidInput("mcpServers is not an object; nothing was written", field="mcpServers")
    servers = dict(servers or {})
    verb = "updated" if SERVER_NAME in servers else "added"
    servers[SERVER_NAME] = dict(entry)
    return {**config, "mcpServers": servers}, f"{verb} MCP server '{SERVER_NAME}' ({len(servers) - 1} other(s) kept)"


def _commands(groups: Any) -> set[str]:
    return {
        h.get("command") for g in groups if isinstance(g, dict) for h in g.get("hooks") or [] if isinstance(h, dict)
    }


def merge_hooks(settings: dict[str, Any], wanted: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    hooks = settings.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InvalidInput("hooks is not an object; nothing was written", field="hooks")
    hooks = dict(hooks or {})
    notes = []
    for event, groups in wanted["hooks"].items():
        present = list(hooks.get(event) or [])
        ours = [h["command"] for g in groups for h in g["hooks"]]
        if all(c in _commands(present) for c in ours):
            notes.append(f"{event}: already installed")
            continue
        hooks[event] = present + list(groups)
        notes.append(f"{event}: added ({len(present)} other hook group(s) kept)")
    return {**settings, "hooks": hooks}, notes


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.copy2(path, path.with_name(path.name + ".bak"))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    os.replace(tmp, path)


# ---- where the files are ------------------------------------------------------------------


def desktop_config_path(environ: Mapping[str, str] | None = None, platform: str = sys.platform) -> Path:
    environ = os.environ if environ is None else environ
    home = Path(environ.get("HOME") or Path.home())
    if platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if platform.startswith("win"):
        return Path(environ.get("APPDATA") or home / "AppData" / "Roaming") / "Claude" / "claude_desktop_config.json"
    return Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "Claude" / "claude_desktop_config.json"


def code_paths(scope: str, folder: Path, environ: Mapping[str, str] | None = None) -> tuple[Path, Path]:
    """(MCP config, settings with hooks) for Claude Code's project or user scope."""
    environ = os.environ if environ is None else environ
    if scope == "user":
        home = Path(environ.get("HOME") or Path.home())
        return home / ".claude.json", home / ".claude" / "settings.json"
    return folder / ".mcp.json", folder / ".claude" / "settings.json"


# ---- the commands -------------------------------------------------------------------------


def cmd_desktop(args: argparse.Namespace) -> None:
    entry = server_entry(args, code=False)
    path = Path(args.config) if args.config else desktop_config_path()
    if not args.write:
        # stdout is the JSON alone (it can be piped into jq or a file); the hint goes to stderr.
        print(
            f"# Merge into {path} (or run again with --write); memories go to project "
            f"'{entry['env']['CAPSULE_PROJECT']}' (--project to name another):",
            file=sys.stderr,
        )
        print(json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2))
        return
    merged, note = merge_server(read_json(path), entry)
    write_json(path, merged)
    print(
        f"{path}: {note}; memories go to project '{entry['env']['CAPSULE_PROJECT']}'. "
        "Restart Claude Desktop to load it."
    )


def cmd_code(args: argparse.Namespace) -> None:
    entry = server_entry(args, code=True)
    hooks = hooks_config(_env_prefix(args))
    mcp_path, settings_path = code_paths(args.scope, Path(args.dir))
    if args.project:
        where = f"# Memories go to project '{args.project}' (--project)."
    elif args.scope == "user":
        where = "# Memories go to the project of the checkout Claude Code runs in (its full path)."
    else:
        where = (
            f"# Memories go to project '{code_project(args)}': the checkout Claude Code runs in, by its full"
            " path (no folder is written into the file, which a team commits)."
        )
    if not args.write:
        print(where)
        print(f"# MCP server: merge into {mcp_path}")
        print(json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2))
        if not args.no_hooks:
            print(f"\n# Hooks: merge into {settings_path}")
            print(json.dumps(hooks, indent=2))
        print("\n# Or run again with --write to merge both (other servers and hooks are kept).")
        return
    merged, note = merge_server(read_json(mcp_path), entry)
    settings = None if args.no_hooks else merge_hooks(read_json(settings_path), hooks)
    write_json(mcp_path, merged)  # both files were read and checked before either is written
    if not_portable_note():
        print(not_portable_note(), file=sys.stderr)
    print(f"{mcp_path}: {note}.")
    if settings is not None:
        write_json(settings_path, settings[0])
        print(f"{settings_path}: " + "; ".join(settings[1]) + ".")
    print(where.lstrip("# "))


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("install", help="connect Claude Desktop or Claude Code to Capsule Memory")
    sub = p.add_subparsers(dest="client", required=True, metavar="CLIENT")
    for name, run, text in [
        ("claude-desktop", cmd_desktop, "print or merge Claude Desktop's MCP config"),
        ("claude-code", cmd_code, "print or merge Claude Code's MCP config and hooks"),
    ]:
        q = sub.add_parser(name, help=text)
        q.add_argument("--write", action="store_true", help="merge into the config file (default: print it)")
        q.add_argument("--url", help="use the hosted API at this URL (default: the embedded local store)")
        q.add_argument("--auth", choices=["sigv4", "apikey", "none"], help="how to sign remote requests")
        q.add_argument("--profile", help="AWS profile for SigV4")
        q.add_argument("--region", help="AWS region for SigV4")
        q.add_argument("--data-dir", help="embedded: data folder")
        q.add_argument(
            "--project",
            type=project_option,
            help=f"the project (default: '{DESKTOP_PROJECT}')"
            if name == "claude-desktop"
            else "a fixed project (default: the checkout Claude Code runs in, by its full path)",
        )
        if name == "claude-desktop":
            q.add_argument("--config", help="the config file (default: Claude Desktop's, for this OS)")
        else:
            q.add_argument(
                "--scope",
                choices=["project", "user"],
                default="project",
                help="project: .mcp.json and .claude/settings.json in --dir; user: ~/.claude.json "
                "and ~/.claude/settings.json",
            )
            q.add_argument("--dir", default=".", help="the project folder (default: the current one)")
            q.add_argument("--no-hooks", action="store_true", help="only the MCP server, no hooks")
        q.set_defaults(run=run)
    vb_shim.register(sub, capsule_command)


__all__ = ["register", "merge_server", "merge_hooks", "hooks_config", "server_entry", "desktop_config_path"]
