"""The README and docs/ state what the code holds: the route table, the MCP tool sets, the settings
and their defaults, the environment variables. Each table here is checked against the code, so it
cannot go stale; the README stays short, and every link in it and in docs/ leads somewhere.

(Their examples run in tests/serve/test_readme_examples.py; the tool counts against a real server in
tests/mcp/test_vb_contract.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def table(text: str, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with ``header``, as cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def code(cell: str) -> str:
    assert cell.startswith("`") and cell.endswith("`"), cell
    return cell[1:-1]


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M), re.M):
        found.add(re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-"))
    return found


def test_the_readme_is_short_and_leads_into_every_docs_page():
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 300
    linked = {m.group(1) for m in LINK.finditer(text) if m.group(1)}
    for page in sorted(DOCS.glob("*.md")):
        assert f"docs/{page.name}" in linked, page.name


def test_every_relative_link_and_image_resolves():
    broken = []
    for page in PAGES:
        if not page.exists():
            continue
        for match in LINK.finditer(page.read_text("utf-8")):
            target = match.group(1) or match.group(2)
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not followed
            path, _, fragment = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.name}: {target}")
            elif fragment and file.suffix == ".md" and fragment not in anchors(file.read_text("utf-8")):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_route_table_is_the_code_s():
    from functions.routes import ROUTES

    text = (DOCS / "http-api.md").read_text("utf-8")
    rows = [(code(name), code(method), code(path)) for name, method, path in table(text, "| operation | method |")]
    assert rows == [(r.name, r.method, r.path) for r in ROUTES]
    assert f"The {len(ROUTES)} routes of `functions/routes.py`" in text
    for route in ROUTES:  # each operation names its handler module, as the page says
        assert route.handler == f"functions.handlers.{route.name}:handler", route


def test_the_tool_sets_and_their_counts_are_the_code_s():
    from mcp_client import tool_sets

    text = (DOCS / "claude.md").read_text("utf-8")
    rows = table(text, "| set | listed by default |")
    assert [code(name) for name, _, _ in rows] == list(tool_sets.SETS)
    for name, default, tools in rows:
        assert (default == "yes") == (code(name) in tool_sets.DEFAULT), name
        assert [t.strip().strip("`") for t in tools.split(",")] == list(tool_sets.SETS[code(name)]), name
    every = sum(len(tools) for tools in tool_sets.SETS.values())
    listed = sum(len(tool_sets.SETS[name]) for name in tool_sets.DEFAULT)
    said = "`capsule mcp` is an MCP server on stdio with {} tools, of which it lists {} by default"
    for page in (README, DOCS / "claude.md"):
        counts = re.findall(said.format(r"(\d+)", r"(\d+)"), re.sub(r"\s+", " ", page.read_text("utf-8")))
        assert counts == [(str(every), str(listed))], page.name


def test_the_settings_table_is_the_code_s():
    from capsule.config import ALIASES, ENVIRONMENT, Settings

    rows = table((DOCS / "operations.md").read_text("utf-8"), "| variable | default | what |")
    assert [code(variable) for variable, _, _ in rows] == list(ENVIRONMENT.values())
    for (variable, default, _), name in zip(rows, ENVIRONMENT, strict=True):
        field = Settings.model_fields[name]
        if field.default_factory is not None:
            assert default == "`~/.capsule`", variable
        elif field.default is None:
            assert default == "unset", variable
        else:
            value = str(field.default).lower() if isinstance(field.default, bool) else str(field.default)
            assert default == f"`{value}`", variable
    text = (DOCS / "operations.md").read_text("utf-8")
    for others in ALIASES.values():
        for other in others:
            assert f"`{other}`" in text, other


def test_every_environment_variable_the_code_reads_is_on_the_operations_page():
    text = (DOCS / "operations.md").read_text("utf-8")
    read = set()
    for folder in ("layers", "functions", "mcp_client", "capsule_cli", "infra"):
        for source in (ROOT / folder).rglob("*.py"):
            read |= set(re.findall(r"\bCAPSULE_[A-Z0-9_]*[A-Z0-9]\b", source.read_text("utf-8")))
    assert sorted(v for v in read if f"`{v}`" not in text) == []
