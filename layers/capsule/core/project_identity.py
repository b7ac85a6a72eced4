"""One checkout, one project: how a project's name is made canonical, labelled and resolved.

The rule (issue 29, COMPAT.md §6). The Vector Bridge keyed a project by the exact
``project_root`` string (``/a/b`` and ``/a/b/`` were two projects, §2.1); Capsule named the
default project by the folder's name. Both reach the same checkout, so both must land in the
same project:

1. **A path names a checkout.** A name that is a path (``/…``, ``~…``, ``./…``, a Windows
   ``C:\\…``) is a project's *root path*. The service makes it canonical textually, as it
   cannot look at the user's disk: runs of ``/`` collapse, trailing ``/`` go (``/`` itself
   stays). The client (``mcp_client.project_name``: the CLI, the MCP server, the hooks) first
   expands ``~`` and ``./`` and resolves symlinks on the user's machine, where the folder is.
2. **The label is the basename** of the canonical path (a bare name is its own label).
3. **A bare name** given by a user resolves to the project of exactly that name, else to the
   one path project whose label it is, else it is a new project of that name.
4. **A path project absorbs the bare project of its label.** Data written under the folder's
   name before the path project existed (Capsule's old default) is merged into it: by the
   store's migration for what is already stored, and here when the path project first appears
   (:func:`resolve`). Only when exactly one path project has that label: two checkouts called
   ``app`` leave the bare ``app`` alone (it cannot be told whose it is).
5. The CLI/MCP/hooks' default project is the git repository's top folder (or the working
   folder) as such a canonical path, never ``/`` nor the home folder.

:func:`canonical` runs for every request model that names a project (``models.ProjectName``),
so the HTTP API, the MCP server (embedded and remote), sync and the importers all get it;
:func:`resolve` is what :meth:`MemoryService.project_of` calls for each operation that names a
project. Cheap: a path name costs one indexed look-up the first time a process sees it, a bare
name one or two (the tenant's project rows by name, then by label).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_SLASHES = re.compile(r"/{2,}")


def is_path(name: str) -> bool:
    """A name that is a folder's path (absolute, home-relative, or a Windows drive path)."""
    return name.startswith(("/", "~", "./", "../")) or bool(_DRIVE.match(name)) or name in (".", "..")


def canonical(name: str) -> str:
    """The service-side canonical form of a project name (textual only: no disk is looked at)."""
    if not isinstance(name, str) or not name.startswith("/"):
        if isinstance(name, str) and _DRIVE.match(name) and len(name) > 3:
            return name.rstrip("\\/") or name
        return name
    if name.startswith("//") and not name.startswith("///"):
        # POSIX leaves a leading "//" to the implementation: keep it, tidy the rest.
        return "/" + (_SLASHES.sub("/", name[1:]).rstrip("/") or "/")
    return _SLASHES.sub("/", name).rstrip("/") or "/"


def label_of(name: str) -> str:
    """The label a project shows: the basename of its canonical path (a bare name: itself)."""
    name = canonical(name)
    if _DRIVE.match(name):
        return re.split(r"[\\/]", name)[-1] or name
    if not name.startswith("/"):
        return name
    return posixpath.basename(name) or name


def root_path(name: str) -> str | None:
    """The project's root path, where its name is one (a bare name has none)."""
    name = canonical(name)
    return name if name.startswith("/") or _DRIVE.match(name) else None


def is_bare(name: str) -> bool:
    """A name with no folder separator: one that may be some checkout's label."""
    return "/" not in name and "\\" not in name and name not in ("", ".", "..", "~")


class Resolver:
    """Resolves names for one store (:func:`resolve`), remembering which path projects it has
    already settled, so a path name costs a look-up once per process, not once per request."""

    MAX_SETTLED = 4096

    def __init__(self, store: Any) -> None:
        self.store = store
        self._settled: dict[tuple[str, str], None] = {}

    def __call__(self, tenant: str, name: str, *, at: datetime, actor: str = "project-identity") -> str:
        name = canonical(name)
        if root_path(name) is not None:
            key = (tenant, name)
            if key not in self._settled:
                absorb_bare(self.store, tenant, name, at=at, actor=actor)
                if len(self._settled) >= self.MAX_SETTLED:
                    self._settled.clear()
                self._settled[key] = None
            return name
        if not is_bare(name) or self.store.project_exists(tenant, name):
            return name
        labelled = self.store.projects_labelled(tenant, name, limit=2)
        return labelled[0] if len(labelled) == 1 else name


def resolve(store: Any, tenant: str, name: str, *, at: datetime) -> str:
    """The project ``name`` means for ``tenant`` (rules 1-4 of the module doc); no cache."""
    return Resolver(store)(tenant, name, at=at)


def absorb_bare(store: Any, tenant: str, path: str, *, at: datetime, actor: str = "project-identity") -> dict[str, int]:
    """Merge the bare project named as ``path``'s label into it, when ``path`` is the only path
    project of that label (rule 4). Returns what moved ({} when nothing did)."""
    label = label_of(path)
    if label == path or not is_bare(label) or not store.project_exists(tenant, label):
        return {}
    others = [p for p in store.projects_labelled(tenant, label, limit=3) if p != path]
    if others:
        return {}  # two checkouts share the label: the bare project cannot be told whose it is
    return store.merge_project(tenant, label, path, at=at, actor=actor)


def merge_plan(names: Iterable[str]) -> list[tuple[str, str]]:
    """``(source, target)`` merges that make a tenant's stored project names follow the rule:
    a non-canonical path into its canonical form, then each bare name into the one path
    project of its label. Sources are never targets, so applying them in order is enough."""
    names = set(names)
    moves: list[tuple[str, str]] = []
    canon = {n: canonical(n) for n in names}
    for name in sorted(names):
        if canon[name] != name:
            moves.append((name, canon[name]))
    paths = {c for c in canon.values() if root_path(c) is not None}
    by_label: dict[str, list[str]] = {}
    for path in sorted(paths):
        by_label.setdefault(label_of(path), []).append(path)
    for name in sorted(n for n in names if canon[n] == n and is_bare(n)):
        targets = by_label.get(name, [])
        if len(targets) == 1:
            moves.append((name, targets[0]))
    return moves


def settle_store(store: Any, *, at: datetime, actor: str = "migration") -> dict[str, dict[str, int]]:
    """Apply :func:`merge_plan` to every tenant of ``store`` (the stores' identity migration).
    Idempotent: a merged name holds nothing, so a second run finds nothing to do."""
    done: dict[str, dict[str, int]] = {}
    for tenant in store.tenants():
        for source, target in merge_plan(store.project_names(tenant)):
            done[f"{tenant}:{source}->{target}"] = store.merge_project(tenant, source, target, at=at, actor=actor)
    return done


__all__ = [
    "Resolver",
    "absorb_bare",
    "canonical",
    "is_bare",
    "is_path",
    "label_of",
    "merge_plan",
    "resolve",
    "root_path",
    "settle_store",
]
