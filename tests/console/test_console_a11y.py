"""Every view of the console checked with axe-core (issue 36, deliverable 5): no serious or critical violation.

Driven in headless Chromium against a real ``capsule serve`` (the fixtures of test_console), with a little
data seeded through the API so that tables, details, lists and the audit log are drawn, not empty. axe-core
comes bundled in the ``axe-playwright-python`` package (the dev extra): nothing is fetched at run time.

Screenshots of the main views are written to test-artifacts/; with ``CAPSULE_CONSOLE_SCREENSHOTS=docs`` they
are written to docs/ instead (docs/console-*.png and docs/console.png), which is how those files are made.
"""

from __future__ import annotations

import os
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from capsule.sync.state import Watermarks, state_path
from tests.conftest import REPO
from tests.console.test_console import (  # noqa: F401  (fixtures)
    Api,
    browser,
    card,
    connect,
    go,
    open_project,
    page,
    server,
    settle,
)
from tests.console.test_console_screens import CAPTURE_EVENTS, FIXPACK
from tests.console.test_console_views import VIEWS

pytestmark = pytest.mark.slow

try:
    from axe_playwright_python.sync_playwright import Axe
except ImportError:  # pragma: no cover - the dev extra installs it
    pytest.skip("axe-playwright-python is missing (pip install -e '.[dev]')", allow_module_level=True)

FAILING = ("serious", "critical")
VIEWPORT = {"width": 1280, "height": 800}
TO_DOCS = os.environ.get("CAPSULE_CONSOLE_SCREENSHOTS") == "docs"
SHOTS = REPO / ("docs" if TO_DOCS else "test-artifacts")
PROJECT = "/srv/console-a11y"


@pytest.fixture(autouse=True)
def no_console_errors(page):
    """As in test_console_views: nothing logged as an error on the console while the test runs."""
    logged: list[str] = []
    page.on("console", lambda msg: logged.append(msg.text) if msg.type == "error" else None)
    yield
    assert logged == [], f"the console logged errors: {logged}"


def _seed(server: Api) -> dict:
    """A project with a few memories (tags, a pin, agents), a solution applied with a pattern, capture
    candidates and audit records: every view has something to draw."""
    stored = [
        server.store(
            PROJECT,
            f"Accessibility memory {n}: " + ("use BEGIN IMMEDIATE for SQLite writers" if n % 2 else "strip caches"),
            tags=["sqlite"] if n % 2 else ["deploy"],
            pinned=n == 0,
            meta={"agent": f"agent-{n % 2}", "session": "s1"},
        )
        for n in range(6)
    ]
    server.store("/srv/console-a11y-other", "a second project, for the project list and the charts")
    for memory in stored[:2]:
        server.ok("POST", f"/v1/memories/{quote(memory['id'])}/feedback", {"helpful": True})
    for memory in stored[1:4]:  # audit records: pins, an unpin, a forget
        server.ok("POST", f"/v1/memories/{quote(memory['id'])}/pin")
    server.ok("POST", f"/v1/memories/{quote(stored[3]['id'])}/unpin")
    server.ok("DELETE", f"/v1/memories/{quote(stored[5]['id'])}?force=true")
    fix = server.ok("POST", "/v1/solutions", {**FIXPACK, "title": "Start the local Redis"})["solution"]
    for worked in (True, True, True, False):
        server.ok(
            "POST",
            f"/v1/solutions/{fix['id']}/apply",
            {
                "success": worked,
                "error": "connect ECONNREFUSED 127.0.0.1:6379",
                "pattern": {"tag": "redis-refused", "category": "network"},
            },
        )
    server.ok("POST", "/v1/memories/capture", {"project": PROJECT, "events": CAPTURE_EVENTS})
    return {"memories": stored, "solution": fix}


def _check(page, axe: Axe, where: str, found: dict[str, list[dict]]) -> None:
    """Run axe on the page as it is now; keep its violations under ``where``."""
    settle(page)
    results = axe.run(page)
    found[where] = results.response["violations"]


def _report(found: dict[str, list[dict]], impacts: tuple[str, ...]) -> list[str]:
    lines = []
    for where, violations in found.items():
        for v in violations:
            if v["impact"] in impacts:
                targets = ", ".join(" ".join(map(str, n["target"])) for n in v["nodes"][:8])
                more = f" (+{len(v['nodes']) - 8} more)" if len(v["nodes"]) > 8 else ""
                lines.append(f"[{where}] {v['id']} ({v['impact']}): {v['help']} -- {targets}{more}")
    return lines


def _shot(page, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{'' if TO_DOCS else 'a11y-'}{name}.png"))


def test_every_view_has_no_serious_or_critical_accessibility_violation(page, server):
    seeded = _seed(server)
    memories, fix = seeded["memories"], seeded["solution"]
    axe = Axe()
    found: dict[str, list[dict]] = {}
    page.set_viewport_size(VIEWPORT)

    _check(page, axe, "connect", found)
    connect(page, server.token)
    open_project(page, PROJECT)

    # Memories: the table, with two rows selected and one opened to the whole memory.
    go(page, "memories")
    rows = page.locator("#table-body tr[data-id]")
    expect(rows).to_have_count(len(memories) - 1)  # one was forgotten
    for row in (rows.nth(1), rows.nth(2)):
        row.locator("input[type=checkbox]").check()
    rows.first.locator(".row-toggle").click()
    expect(page.locator("#table-body tr.row-detail pre")).to_be_visible()
    _check(page, axe, "memories", found)
    _shot(page, "console-memories")
    if TO_DOCS:  # the getting-started page's picture: the same table, 1280x900 (CONTRIBUTING)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.screenshot(path=str(SHOTS / "console.png"))
        page.set_viewport_size(VIEWPORT)

    # Search, with its results and each hit's score breakdown.
    go(page, "search")
    page.get_by_label("Query").fill("sqlite writers")
    page.get_by_role("button", name="Search", exact=True).click()
    settle(page)
    expect(page.locator("#hit-list li.card-item").first).to_be_visible()
    _check(page, axe, "search", found)

    # Projects: the list, the project's memories, and one memory's detail open.
    go(page, "projects")
    card(page, "memory-list", memories[1]["id"]).locator("[data-action='Details']").click()
    settle(page)
    expect(page.locator("#detail")).to_be_visible()
    _check(page, axe, "projects+detail", found)
    for opens, shown in (("Edit", "#edit-form"), ("History and audit trail", "#history"), ("Audit records", "#audit")):
        page.locator("#detail-actions").get_by_role("button", name=opens, exact=True).click()
        settle(page)
        expect(page.locator(shown)).to_be_visible()
    _check(page, axe, "projects+detail+edit+history", found)

    # Solutions: the list, then one open with its steps and its outcome form.
    go(page, "solutions")
    page.get_by_role("button", name="Load solutions").click()
    settle(page)
    item = page.locator(f"#solution-list li[data-id='{fix['id']}']")
    expect(item).to_be_visible()
    _check(page, axe, "solutions", found)
    item.get_by_role("button").click()
    settle(page)
    expect(page.locator("#solution-title")).to_have_text(fix["title"])
    _check(page, axe, "solutions+detail", found)
    _shot(page, "console-solutions")
    page.locator("#solution-editor summary").click()
    expect(page.get_by_label("Solution title")).to_be_visible()
    _check(page, axe, "solutions+editor", found)

    # Patterns and golden paths: the golden path of the seeded pattern, and a match.
    go(page, "patterns")
    page.get_by_label("Golden paths: fixes applied at least (times)").fill("0")
    page.get_by_role("button", name="Show golden paths").click()
    expect(page.locator("#alert")).to_contain_text("whole number from 1")
    _check(page, axe, "patterns+alert", found)
    page.get_by_label("Golden paths: fixes applied at least (times)").fill("3")
    page.get_by_role("button", name="Show golden paths").click()
    settle(page)
    expect(page.locator("#golden-list li[data-tag='redis-refused']")).to_be_visible()
    page.get_by_label("Which known patterns does this error match?").fill("connect ECONNREFUSED 127.0.0.1:6379")
    page.get_by_role("button", name="Match patterns").click()
    settle(page)
    _check(page, axe, "patterns", found)

    # The capture queue with its two candidates.
    go(page, "capture")
    expect(page.locator("#candidate-list li.cand")).to_have_count(2)
    _check(page, axe, "capture", found)

    # Activity: the tenant's audit log, the dashboard and the charts.
    go(page, "activity")
    expect(page.locator("#audit-log-body tr[data-memory]").first).to_be_visible()
    page.get_by_role("button", name="Refresh charts").click()
    settle(page)
    _check(page, axe, "activity", found)
    _shot(page, "console-activity")

    # Keys and scopes: the list, and a new key shown once with its copy button.
    go(page, "keys")
    page.get_by_label("Name", exact=True).fill("a11y-bot")
    page.get_by_label("Key access").select_option("read")
    page.get_by_role("button", name="Create key").click()
    settle(page)
    expect(page.locator("#key-list li[data-name='a11y-bot']")).to_be_visible()
    _check(page, axe, "keys", found)
    _shot(page, "console-keys")
    server.ok("DELETE", "/v1/keys/a11y-bot")

    go(page, "settings")
    _check(page, axe, "settings", found)
    go(page, "transfer")
    _check(page, axe, "transfer", found)

    # Usage over time: the chart, its table and the totals (or, on a server without GET /v1/usage, the
    # sentence saying so).
    go(page, "usage")
    _check(page, axe, "usage", found)
    _shot(page, "console-usage")

    # Sync: one target capsule sync ran against, with its watermarks.
    peer = "https://sync.example.com"
    marks = Watermarks(state_path(server.data_dir / "sync", peer, "local"), peer)
    marks.set(PROJECT, "push", [3, 17])
    marks.finished(PROJECT, "push")
    marks.save()
    go(page, "sync")
    expect(page.locator(".sync-target")).to_have_count(1)
    _check(page, axe, "sync", found)
    _shot(page, "console-sync")

    # The same views in the dark colour scheme (style.css follows prefers-color-scheme): its own contrast.
    page.emulate_media(color_scheme="dark")
    for view in VIEWS:
        go(page, view)
        _check(page, axe, f"{view} (dark)", found)
    page.emulate_media(color_scheme="light")

    assert {f"{view} (dark)" for view in VIEWS} <= set(found)  # every view of the navigation was checked
    everything = _report(found, ("minor", "moderate", *FAILING))
    print("\n".join(["axe-core violations, by view:", *everything]) if everything else "axe-core: no violations")
    failing = _report(found, FAILING)
    assert failing == [], "serious or critical accessibility violations:\n" + "\n".join(failing)
