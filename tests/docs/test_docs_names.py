"""Every module and file the README, CONTRIBUTING.md and docs/ name exists.

A dotted name (`capsule.search.hybrid`, `capsule_cli.cli:main`, `mcp_client.client.CapsuleClient`)
must be a module of `layers/capsule/`, `capsule_cli/` or `mcp_client/`, or a name bound at the top of
one; a repo-relative path (`functions/routes.py`, `tests/test_layers.py`, `bench-results/*.json`, a
folder ending in `/`) must be in the checkout, globs and `<placeholders>` matching at least one file;
a path into the library written from `capsule/` is read under `layers/` (and should say `layers/capsule/`).
Read from the files' text and the code's syntax trees: nothing is imported.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGES = {
    "capsule": ROOT / "layers" / "capsule",
    "capsule_cli": ROOT / "capsule_cli",
    "mcp_client": ROOT / "mcp_client",
}
DOTTED = re.compile(r"(?<![\w./-])((?:capsule|capsule_cli|mcp_client)(?:[.:][A-Za-z_]\w*)+)")
TOPS = (
    "capsule",
    "layers",
    "functions",
    "mcp_client",
    "capsule_cli",
    "infra",
    "scripts",
    "tests",
    "docs",
    "bench-results",
    ".ci",
)
ROOTS = "|".join(re.escape(top) for top in TOPS)
PATH = re.compile(rf"(?<![\w./:-])((?:{ROOTS})/[\w.*<>/-]*)")
FILES = re.compile(r"(?<![\w./-])(pyproject\.toml|cdk\.json|README\.md|CONTRIBUTING\.md)\b")


@cache
def top_names(source: Path) -> frozenset[str]:
    """The names a module binds at its top level (defs, classes, assignments, imports)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text("utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return frozenset(names)


def resolves(dotted: str) -> bool:
    """A module, then at most a name bound at its top (whatever follows that name is not checked)."""
    head, *parts = re.split(r"[.:]", dotted)
    where = PACKAGES[head]
    for part in parts:
        if where.is_dir() and (where / part / "__init__.py").exists():
            where = where / part
        elif where.is_dir() and (where / f"{part}.py").exists():
            where = where / f"{part}.py"
        else:
            return part in top_names(where / "__init__.py" if where.is_dir() else where)
    return True


def exists(path: str) -> bool:
    path = path.rstrip(".")
    pattern = re.sub(r"<[^>]*>", "*", path).rstrip("/")
    if pattern.startswith("capsule/") or pattern == "capsule":
        pattern = f"layers/{pattern}"
    if any(ch in pattern for ch in "*?["):
        return any(ROOT.glob(pattern))
    return (ROOT / pattern).exists()


def mentions(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for match in pattern.finditer(page.read_text("utf-8")):
            found.append((page.name, match.group(1)))
    return found


def test_every_dotted_module_named_exists():
    named = mentions(DOTTED)
    assert len(named) > 20  # the pattern still finds them
    assert sorted({f"{page}: {name}" for page, name in named if not resolves(name)}) == []


def test_every_repo_relative_path_named_exists():
    named = mentions(PATH) + mentions(FILES)
    assert len(named) > 50
    assert sorted({f"{page}: {path}" for page, path in named if not exists(path)}) == []
