"""The import graph keeps its shape: no import circles, and every arrow goes down the declared layer
order (docs/architecture.md draws it). Read with ast from the sources, nothing imported, so an import
inside a function or under TYPE_CHECKING counts as much as one at the top.

Also runs as a script: ``python tests/test_layers.py [ROOT]`` prints the cycles and the upward imports.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Layer order, lowest first: a module may import its own package and the packages of lower layers,
# never a package of its own layer or a higher one. A module is placed by its longest prefix here.
LAYERS: list[tuple[str, ...]] = [
    ("capsule.core",),  # the memory model, errors, vocabulary
    ("capsule.compat", "capsule.governance", "capsule.crypto"),  # rules and primitives over the model
    ("capsule.search",),  # the search engine
    ("capsule.config",),  # settings
    ("capsule.store",),  # stores (they keep the engine's row codecs)
    ("capsule.embedders", "capsule.guard"),
    ("capsule.sealing", "capsule.learning"),
    ("capsule.service",),  # the memory service
    ("capsule.capture", "capsule.transfer", "capsule.authz"),
    ("capsule.sync", "capsule.jobs"),
    ("capsule.runtime",),  # the library's composition
    ("capsule",),  # the public surface (capsule/__init__)
    ("functions",),  # the HTTP API (Lambda handlers, capsule serve)
    ("mcp_client",),  # the local client: proxy, MCP server, hooks
    ("capsule_cli",),  # the capsule command
    ("infra",),  # the AWS deployment (CDK)
]
RANK = {prefix: rank for rank, group in enumerate(LAYERS) for prefix in group}
# The signing proxy: neither the search engine nor the CLI, however indirectly.
PROXY = ["mcp_client.client", "mcp_client.auth", "mcp_client.auth_choice", "mcp_client.transport"]
PROXY_NEVER = ("capsule.search", "capsule_cli")


def modules(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for base, top in (
        ("layers", "capsule"),
        (".", "functions"),
        (".", "mcp_client"),
        (".", "capsule_cli"),
        (".", "infra"),
    ):
        folder = root / base / top
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    path = Path(dirpath) / name
                    dotted = ".".join(path.relative_to(root / base).with_suffix("").parts)
                    found[dotted.removesuffix(".__init__")] = path
    return found


def graph(root: Path) -> dict[str, set[str]]:
    mods = modules(root)
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    prefix = ".".join(parts + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                for alias in node.names:  # a submodule when it is one, else the module it comes from
                    targets.add(f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in mods else prefix)
        resolved = set()
        for target in targets:
            while target and target not in mods:
                target = target.rpartition(".")[0]
            if target and target != name:
                resolved.add(target)
        edges[name] = resolved
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        item = stack.pop()
                        on_stack.discard(item)
                        component.append(item)
                        if item == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in RANK:
            return ".".join(parts[:end])
    return None


def unplaced(edges: dict[str, set[str]]) -> list[str]:
    return sorted(m for m in edges if layer_of(m) is None)


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Imports of a package of the same or a higher layer (within one package: free)."""
    wrong = []
    for source in sorted(edges):
        src = layer_of(source)
        for target in sorted(edges[source]):
            dst = layer_of(target)
            if src is None or dst is None or src == dst:
                continue
            if RANK[dst] >= RANK[src]:
                wrong.append(f"{source} -> {target} ({src}, layer {RANK[src]} -> {dst}, layer {RANK[dst]})")
    return wrong


def proxy_leaks(root: Path) -> list[str]:
    """What importing the proxy's modules loads of the search engine or the CLI (in a fresh
    interpreter: a lazy import inside a function that the proxy never calls does not count)."""
    code = f"import sys; import {', '.join(PROXY)}; print('\\n'.join(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "layers"), str(root)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return [m for m in done.stdout.split() if m.startswith(PROXY_NEVER)]


def test_no_import_cycles():
    assert cycles(graph(ROOT)) == []


def test_every_module_has_a_layer():
    assert unplaced(graph(ROOT)) == []  # a new package: add it to LAYERS (and to docs/architecture.md)


def test_no_upward_imports():
    assert upward(graph(ROOT)) == []


def test_the_signing_proxy_loads_no_search_engine_and_no_cli():
    assert all(name in graph(ROOT) for name in PROXY)
    assert proxy_leaks(ROOT) == []


def test_the_library_imports_no_edge():
    edges = graph(ROOT)
    library = [m for m in edges if m.split(".")[0] == "capsule"]
    assert [(m, t) for m in library for t in edges[m] if t.split(".")[0] != "capsule"] == []


if __name__ == "__main__":
    root = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    edges = graph(root)
    found, loose, wrong = cycles(edges), unplaced(edges), upward(edges)
    try:
        leaks = proxy_leaks(root)
    except subprocess.CalledProcessError:  # this interpreter lacks the dependencies: pytest checks it
        print("the proxy's imports: not checked here (run with the project's Python)")
        leaks = []
    for component in found:
        print("cycle:", " ".join(component))
    for line in wrong:
        print("upward:", line)
    for name in loose:
        print("no layer:", name)
    for name in leaks:
        print("the proxy reaches:", name)
    print(
        f"{len(edges)} modules: {len(found)} cycles, {len(wrong)} upward imports, {len(loose)} without a layer, "
        f"{len(leaks)} proxy leaks"
    )
    sys.exit(1 if found or wrong or loose or leaks else 0)
