"""The console's native ES modules (functions/console/*.js), without a browser.

index.html loads one entry module, app.js, which imports the rest: every import names a file
that is there, the import graph has no cycle, and the gateway serves each module with a
JavaScript type (a browser refuses to run a module served as anything else).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from functions.auth import HttpRequest
from functions.gateway import CONSOLE_DIR
from tests.support.gateway import own_gateway

REPO = Path(__file__).parents[2]
CONSOLE = REPO / "functions" / "console"
MODULES = sorted(CONSOLE.glob("*.js"))
# Static imports and re-exports (`import { a } from './x.js';`, `import './x.js';`,
# `export { a } from './x.js';`) and dynamic ones (`import('./x.js')`).
IMPORT = re.compile(
    r"""(?:^|\n)\s*(?:import|export)\b[^;'"]*?\bfrom\s*(['"])(?P<a>[^'"]+)\1"""
    r"""|(?:^|\n)\s*import\s*(['"])(?P<b>[^'"]+)\3"""
    r"""|\bimport\s*\(\s*(['"])(?P<c>[^'"]+)\5\s*\)"""
)


def imports_of(module: Path) -> list[str]:
    text = re.sub(r"/\*.*?\*/", "", module.read_text("utf-8"), flags=re.S)  # a comment may name a file
    return [m.group("a") or m.group("b") or m.group("c") for m in IMPORT.finditer(text)]


def graph() -> dict[str, list[str]]:
    return {module.name: [Path(spec).name for spec in imports_of(module)] for module in MODULES}


def test_the_page_loads_one_entry_module():
    page = (CONSOLE / "index.html").read_text("utf-8")
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert scripts == ['<script type="module" src="/ui/app.js">']
    assert "app.js" in {m.name for m in MODULES}


def test_every_import_names_a_module_beside_it():
    assert len(MODULES) > 1
    for module in MODULES:
        for spec in imports_of(module):
            # Relative, in the same folder, with its extension: what a browser resolves with no
            # import map and what package-data ("console/*") installs.
            assert re.fullmatch(r"\./[\w.-]+\.js", spec), f"{module.name} imports {spec!r}"
            assert (CONSOLE / spec[2:]).is_file(), f"{module.name} imports {spec}, which is missing"


def test_every_module_is_reached_from_the_entry():
    edges = graph()
    seen, todo = set(), ["app.js"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(edges[name])
    assert seen == set(edges), f"not imported by anything app.js reaches: {sorted(set(edges) - seen)}"


def test_the_import_graph_has_no_cycle():
    edges = graph()
    state: dict[str, str] = {}  # "open" while on the path, "done" once explored

    def visit(name: str, path: list[str]) -> None:
        state[name] = "open"
        for target in edges[name]:
            if state.get(target) == "open":
                cycle = path[path.index(target) :] + [name, target] if target in path else [name, target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, name])
        state[name] = "done"

    for name in edges:
        if name not in state:
            visit(name, [])


def test_the_shared_helpers_import_no_view():
    helpers = {"state.js", "dom.js", "format.js", "api.js", "messages.js", "limits.js", "router.js"}
    for name, targets in graph().items():
        if name in helpers:
            assert set(targets) <= helpers, f"{name} imports {sorted(set(targets) - helpers)}"


def test_every_module_has_a_header_saying_what_it_holds():
    for module in MODULES:
        assert module.read_text("utf-8").startswith("/* Capsule Memory console: "), module.name


def test_the_modules_are_packaged():
    # package-data installs console/* (files, not folders): the modules stay flat beside app.js.
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    assert "console/*" in package_data["functions"]
    assert [p.name for p in CONSOLE.iterdir() if p.is_dir()] == []


@pytest.fixture
def gateway(tmp_path):
    return own_gateway(tmp_path)


def test_the_gateway_serves_every_module_as_javascript(gateway):
    assert CONSOLE_DIR.resolve() == CONSOLE.resolve()
    for module in MODULES:
        reply = gateway.handle(HttpRequest("GET", "/ui/" + module.name, "", [], b""), "x")
        assert reply.status == 200, module.name
        kind = reply.headers["Content-Type"].split(";")[0].strip()
        assert kind in ("text/javascript", "application/javascript"), (module.name, kind)
        assert reply.body == module.read_bytes()
