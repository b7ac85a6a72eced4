"""Finding the files to ingest: text files only, and none that .gitignore ignores."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from capsule.core import limits

ALWAYS_SKIPPED = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}


def is_text_file(path: Path) -> bool:
    """A file is text when its first 8 KiB hold no NUL byte and decode as UTF-8."""
    try:
        with path.open("rb") as handle:
            head = handle.read(8192)
    except OSError:
        return False
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start > len(head) - 4  # a character cut at the 8 KiB boundary
    return True


def _git_files(folder: Path) -> list[Path] | None:
    """Tracked and untracked-but-not-ignored files, when ``folder`` is in a git work tree."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=folder,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [folder / name for name in out.decode("utf-8", "replace").split("\0") if name]


def _ignore_patterns(folder: Path) -> list[str]:
    gitignore = folder / ".gitignore"
    if not gitignore.is_file():
        return []
    lines = gitignore.read_text("utf-8", "replace").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "!"))]


def _ignored(relative: str, patterns: list[str]) -> bool:
    parts = relative.split("/")
    for pattern in patterns:
        bare = pattern.strip("/")
        if "/" in bare:
            if fnmatch.fnmatch(relative, bare) or relative.startswith(bare + "/"):
                return True
        elif any(fnmatch.fnmatch(part, bare) for part in parts):
            return True
    return False


def walk(folder: Path) -> list[Path]:
    files = _git_files(folder)
    if files is None:
        patterns = _ignore_patterns(folder)
        files = []
        for root, dirs, names in os.walk(folder):
            rel_root = Path(root).relative_to(folder).as_posix()
            dirs[:] = [
                d for d in dirs if d not in ALWAYS_SKIPPED and not _ignored(f"{rel_root}/{d}".lstrip("./"), patterns)
            ]
            files += [Path(root) / n for n in names if not _ignored(f"{rel_root}/{n}".lstrip("./"), patterns)]
    return sorted(p for p in files if p.is_file())


def ingestible(targets: list[Path]) -> Iterator[tuple[Path, str | None]]:
    """Each candidate file with None, or with the reason it is skipped."""
    for target in targets:
        for path in [target] if target.is_file() else walk(target):
            if not is_text_file(path):
                yield path, "binary"
            elif path.stat().st_size > limits.MAX_INGEST_BYTES:
                yield path, f"larger than {limits.MAX_INGEST_BYTES // 1024} KiB"
            elif path.stat().st_size == 0:
                yield path, "empty"
            else:
                yield path, None
