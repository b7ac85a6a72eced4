"""The default project, and a project name given on this machine, one rule for the CLI, the MCP
server and the hooks (the client side of capsule.core.project_identity: one checkout, one project).

A project is named by its checkout's folder as a canonical full path -- what the Vector
Bridge's hooks and its database name it (``/Users/me/my-app``), so memories they wrote and
memories written here land in one project:

- the default: ``CAPSULE_PROJECT`` when set; else the top folder of the git repository the
  folder is in (every subfolder of a checkout is the same project); else the folder itself.
  The file system's root and the home folder are never a project (Claude Desktop starts
  servers there): the default is then the named project :data:`NAMED_DEFAULT`.
- a path-like name (absolute, ``~``, ``./``, ``../``, ``.``) is made canonical here, where the
  folder is: ``~`` expanded, made absolute, symlinks resolved where the folder exists, trailing
  ``/`` dropped. The service cannot do this part (it only strips slashes and finds a bare
  name's checkout by its label), so it is done on the user's machine.
- any other name (``my-app``) is sent as given: the service resolves it to the project of that
  exact name, else the one checkout whose folder is named so.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is a start-up cost the warm route does not pay
    from collections.abc import Mapping

MAX_PARENTS = 64  # bounds the walk up to the repository's top
NAMED_DEFAULT = "default"  # the project of a client started in "/" or the home folder


def repository_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (a folder, or a worktree's file)."""
    for place in [folder, *folder.parents][:MAX_PARENTS]:
        if (place / ".git").exists():
            return place
    return None


def is_path(name: str) -> bool:
    return (
        name.startswith(("/", "~", "./", "../"))
        or name in (".", "..")
        or (len(name) > 2 and name[1] == ":" and name[2] in "\\/")
    )


def canonical_folder(folder: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> str:
    """A folder's canonical full path on this machine: ``~`` expanded, absolute, symlinks resolved
    where it exists, no trailing slash."""
    path = os.path.expanduser(os.fspath(folder))
    if not os.path.isabs(path):
        path = os.path.join(os.fspath(cwd) if cwd is not None else os.getcwd(), path)
    path = os.path.realpath(path) if os.path.exists(path) else os.path.normpath(path)
    return path.rstrip("/\\") or path[:1] or "/"


def client_project(name: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """A project name given by a user or a client on this machine, canonical where it is a path."""
    name = name.strip() if isinstance(name, str) else name
    return canonical_folder(name, cwd) if name and is_path(name) else name


def _is_root_or_home(path: str, environ: Mapping[str, str]) -> bool:
    home = environ.get("HOME") or os.path.expanduser("~")
    homes = {canonical_folder(home)} if home and home != "~" else set()
    return path in ("/", "") or Path(path).parent == Path(path) or path in homes


def default_project(environ: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    if environ.get("CAPSULE_PROJECT"):
        return client_project(environ["CAPSULE_PROJECT"], cwd)
    folder = Path(canonical_folder(cwd if cwd is not None else os.getcwd()))
    root = repository_root(folder)
    named = canonical_folder(root) if root is not None else str(folder)
    if _is_root_or_home(named, environ):
        # A repository at / or ~ (a dotfiles checkout) is not a project: the folder itself, if deeper.
        named = str(folder) if root is not None and not _is_root_or_home(str(folder), environ) else NAMED_DEFAULT
    return named


__all__ = ["NAMED_DEFAULT", "canonical_folder", "client_project", "default_project", "is_path", "repository_root"]
