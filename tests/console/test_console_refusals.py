"""The console refuses an empty or out-of-range form on the page (limits.refuse): the alert says
what to fix, focus goes to the input, and nothing is sent."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.console.test_console import (  # noqa: F401  (fixtures)
    browser,
    connect,
    go,
    open_project,
    page,
    server,
    settle,
)

pytestmark = pytest.mark.slow


def _refused(page, form: str, operation: str, message: str, field: str) -> None:
    page.locator(f"#{form}").evaluate("form => form.requestSubmit()")
    alert = page.get_by_role("alert").filter(has_text=f"{operation} failed")
    expect(alert).to_contain_text(message)
    expect(page.locator(f"#{field}")).to_be_focused()


def test_each_empty_form_is_refused_on_the_page_naming_what_to_fix(page, server):
    connect(page, server.token)
    sent: list[str] = []
    page.on("request", lambda r: sent.append(f"{r.method} {r.url}") if r.method != "GET" else None)

    _refused(page, "project-form", "Open project", "Type a project name.", "project-input")
    open_project(page, "/srv/console-refusals")
    go(page, "projects")
    page.locator("#store-content").fill("   ")
    _refused(page, "store-form", "Store", "Write something to remember first.", "store-content")
    _refused(page, "restore-form", "Restore", "Type the id of a forgotten memory.", "restore-id")
    go(page, "search")
    _refused(page, "search-form", "Search", "Type what to look for.", "search-query")
    go(page, "settings")
    page.locator("#settings-limit").fill("0")
    _refused(
        page,
        "settings-form",
        "Settings",
        "The retention limit is a whole number from 1 to 1,000,000.",
        "settings-limit",
    )
    settle(page)
    assert sent == []
