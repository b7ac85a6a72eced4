"""The default project, one rule for the CLI, the MCP server and the hooks.

``CAPSULE_PROJECT`` when set; else the name of the git repository the folder is in (its
top-level folder's name, so every subfolder of a checkout is the same project); else the
folder's own name. A short, stable name (``api``, not ``/home/me/src/api``) that reads well in
``capsule projects`` and is the same on every machine the repository is cloned to.
"""

from __future__ import annotations

import os
from pathlib import Path
TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is a start-up cost the warm route does not pay
    from typing import Mapping

MAX_PARENTS = 64  # bounds the walk up to the repository's top


def repository_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (a folder, or a worktree's file)."""
    for place in [folder, *folder.parents][:MAX_PARENTS]:
        if (place / ".git").exists():
            return place
    return None


def default_project(environ: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    if environ.get("CAPSULE_PROJECT"):
        return environ["CAPSULE_PROJECT"]
    folder = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    named = repository_root(folder) or folder
    return named.name or str(named)  # the file system's root has no name: keep "/"


__all__ = ["default_project", "repository_root"]
