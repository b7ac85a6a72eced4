"""The console's Usage and Sync views and the Activity view's time range (issue 36).

Driven in headless Chromium against a real ``capsule serve`` (the fixtures of test_console). The Sync view
reads capsule sync's state files, written here with capsule.sync.state into the server's data folder.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.sync_api import expect

from capsule.sync.state import SEEN_ALL, Watermarks, state_path
from tests.conftest import REPO
from tests.console.test_console import (  # noqa: F401  (fixtures)
    Api,
    browser,
    connect,
    go,
    idle,
    page,
    server,
    settle,
)

pytestmark = pytest.mark.slow

USAGE_HANDLER = REPO / "functions" / "handlers" / "usage.py"


@pytest.fixture(autouse=True)
def no_console_errors(page):
    """As in test_console_views: nothing logged as an error on the console while a test runs, but for the
    browser's own line about an answer the test asked for (a 403 or 404 shown in the page)."""
    logged: list[str] = []
    page.on("console", lambda msg: logged.append(msg.text) if msg.type == "error" else None)
    yield
    unexpected = [
        m for m in logged if not m.startswith("Failed to load resource: the server responded with a status of")
    ]
    assert unexpected == [], f"the console logged errors: {unexpected}"


def hash_params(page) -> dict[str, list[str]]:
    return parse_qs(page.evaluate("location.hash").partition("?")[2])


# ---- sync ----------------------------------------------------------------------------------


def test_the_sync_view_says_no_target_then_shows_each_targets_watermarks_without_secrets(page, server):
    folder = server.data_dir / "sync"
    for old in folder.glob("*.json") if folder.is_dir() else []:
        old.unlink()
    connect(page, server.token)
    go(page, "sync")
    expect(page.locator("#sync-none")).to_have_text("No sync target configured.")
    expect(page.locator("#sync-explanation")).to_contain_text("capsule sync has not run")

    peer = "https://bob:hunter2@remote.example/api?token=t0p"
    at = datetime(2026, 12, 4, 4, 30, tzinfo=UTC)
    marks = Watermarks(state_path(folder, peer, "local"), peer, clock=lambda: at)
    marks.set("/srv/synced", "push", [4, 12])
    marks.finished("/srv/synced", "push")
    marks.set("/srv/synced", "pull", [7, SEEN_ALL])
    marks.save()

    page.get_by_role("button", name="Refresh sync status").click()
    settle(page)
    target = page.locator(".sync-target")
    expect(target).to_have_count(1)
    expect(target.get_by_role("heading")).to_have_text("https://***@remote.example/api?***")
    row = target.locator("tr[data-project='/srv/synced']")
    expect(row.locator("td").nth(0)).to_have_text("version 4, row 12")
    expect(row.locator("td time").first).to_have_attribute("datetime", "2026-12-04T04:30:00Z")
    expect(row.locator("td").nth(2)).to_have_text("version 7, every row")
    expect(row.locator("td").nth(3)).to_have_text("never")
    text = page.locator("#view-sync").inner_text()
    assert "hunter2" not in text and "bob" not in text and "t0p" not in text
    # The address is the view's own: a reload comes back to it.
    page.reload()
    expect(page.locator("#view-sync")).to_be_visible()
    settle(page)
    expect(page.locator(".sync-target")).to_have_count(1)


def test_a_named_key_is_told_the_sync_status_needs_the_gateways_token(page, server):
    made = server.ok("POST", "/v1/keys", {"name": "console-sync-reader"})
    try:
        connect(page, made["key"])
        go(page, "sync")
        expect(page.locator("#sync-explanation")).to_contain_text("Only the gateway's own token")
        expect(page.locator(".sync-target")).to_have_count(0)
        idle(page.locator("#alert"))
    finally:
        server.ok("DELETE", "/v1/keys/console-sync-reader")


# ---- usage ---------------------------------------------------------------------------------


def usage_answer(since: str, until: str, bucket: str) -> dict:
    start = datetime.fromisoformat(until.replace("Z", "+00:00")) - timedelta(days=2 if bucket == "day" else 0, hours=2)
    first = start.strftime("%Y-%m-%dT%H:%M:%SZ")
    second = (start + (timedelta(days=1) if bucket == "day" else timedelta(hours=1))).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "bucket": bucket,
        "since": since,
        "until": until,
        "rate_limit_per_minute": 600,
        "series": [
            {"start": first, "requests": 12, "operations": {"search": 5, "store": 7}},
            {"start": second, "requests": 3, "operations": {"search": 3}},
        ],
        "explanation": f"15 requests, in 2 {bucket}s that had any.",
    }


def test_usage_is_drawn_as_bars_with_a_table_totals_and_the_rate_limit_and_the_address_keeps_the_range(page, server):
    asked: list[dict[str, list[str]]] = []

    def answer(route):
        query = parse_qs(urlsplit(route.request.url).query)
        asked.append(query)
        body = usage_answer(query["since"][0], query["until"][0], query["bucket"][0])
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route("**/v1/usage?*", answer)
    connect(page, server.token)
    go(page, "usage")
    expect(page.locator("#usage-figure rect.bar-all")).to_have_count(2)
    assert asked[-1]["bucket"] == ["hour"]
    since, until = (datetime.fromisoformat(asked[-1][k][0].replace("Z", "+00:00")) for k in ("since", "until"))
    assert until - since == timedelta(hours=24) and until.minute == 0 and until.second == 0

    page.get_by_label("Usage range").select_option("7d")
    page.get_by_label("One bar per").select_option("day")
    page.get_by_role("button", name="Show usage").click()
    settle(page)
    assert hash_params(page) == {"range": ["7d"], "bucket": ["day"]}
    assert asked[-1]["bucket"] == ["day"]
    since, until = (datetime.fromisoformat(asked[-1][k][0].replace("Z", "+00:00")) for k in ("since", "until"))
    assert until - since == timedelta(days=7) and until.hour == 0
    bars = page.locator("#usage-figure rect.bar-all")
    expect(bars).to_have_count(2)
    heights = bars.evaluate_all("rs => rs.map(r => Number(r.getAttribute('height')))")
    assert heights[0] == pytest.approx(4 * heights[1], rel=0.01)  # 12 and 3 requests
    # The same numbers as a table for screen readers, and the totals by operation.
    table_rows = page.locator("#usage-table tbody tr")
    expect(table_rows).to_have_count(2)
    expect(table_rows.first.locator("td").nth(0)).to_have_text("12")
    expect(table_rows.first.locator("td").nth(1)).to_have_text("store 7, search 5")
    expect(page.locator("#usage-totals-body tr[data-operation='search'] td")).to_have_text("8")
    expect(page.locator("#usage-totals-body tr[data-operation='store'] td")).to_have_text("7")
    expect(page.locator("#usage-totals-body tr.usage-total td")).to_have_text("15")
    expect(page.locator("#usage-limit")).to_have_text("Rate limit: 600 requests per minute.")
    expect(page.locator("#usage-explanation")).to_have_text("15 requests, in 2 days that had any.")

    page.reload()
    expect(page.locator("#view-usage")).to_be_visible()
    settle(page)
    expect(page.get_by_label("Usage range")).to_have_value("7d")
    expect(page.get_by_label("One bar per")).to_have_value("day")
    expect(page.locator("#usage-figure rect.bar-all")).to_have_count(2)


def test_usage_against_the_real_route(page, server):
    """With functions/handlers/usage.py in the tree the server's own answer is drawn; without it the
    route is a 404 and the view says usage is not available here."""
    server.store("/srv/console-usage", "a request to count")
    connect(page, server.token)
    go(page, "usage")
    if USAGE_HANDLER.exists():
        expect(page.locator("#usage-unavailable")).to_be_hidden()
        expect(page.locator("#usage-figure figcaption")).to_contain_text("per hour")
        expect(page.locator("#usage-totals-body tr.usage-total")).to_be_visible()
    else:
        expect(page.locator("#usage-unavailable")).to_be_visible()
        expect(page.locator("#usage-unavailable")).to_contain_text("Usage is not available on this server")
        expect(page.locator("#usage-body")).to_be_hidden()
        idle(page.locator("#alert"))


# ---- the activity view's time range --------------------------------------------------------


def test_the_audit_log_filters_by_time_through_the_api_and_the_address_keeps_it(page, server):
    project = "/srv/console-audit-time"
    memory = server.store(project, "a memory pinned for its audit record")
    server.ok("POST", f"/v1/memories/{quote(memory['id'])}/pin")
    connect(page, server.token)
    go(page, "activity")
    rows = page.locator("#audit-log-body tr[data-memory]")
    page.get_by_label("Audit project").fill(project)
    page.get_by_label("Audit since (UTC)").fill("2020-01-01T00:00:00")
    with page.expect_request("**/v1/audit?*") as sent:
        page.get_by_role("button", name="Show audit log").click()
    settle(page)
    assert parse_qs(urlsplit(sent.value.url).query)["since"] == ["2020-01-01T00:00:00.000Z"]
    expect(rows).to_have_count(1)

    # Seconds other than 00: a datetime-local input drops ":00" from its value (it read
    # "...T17:57" once, when the clock stood at a whole minute).
    later = (datetime.now(UTC) + timedelta(days=1)).replace(second=30).strftime("%Y-%m-%dT%H:%M:%S")
    page.get_by_label("Audit since (UTC)").fill(later)
    page.get_by_role("button", name="Show audit log").click()
    settle(page)
    expect(rows).to_have_count(0)
    expect(page.locator("#audit-log-empty")).to_be_visible()
    assert hash_params(page)["since"] == [later]

    page.get_by_label("Audit since (UTC)").fill("")
    page.get_by_label("Audit before (UTC)").fill("2020-01-01T00:00:00")
    page.get_by_role("button", name="Show audit log").click()
    settle(page)
    expect(rows).to_have_count(0)
    page.reload()
    expect(page.locator("#view-activity")).to_be_visible()
    settle(page)
    expect(page.get_by_label("Audit before (UTC)")).to_have_value("2020-01-01T00:00")
    expect(rows).to_have_count(0)


def test_the_memory_tables_time_fields_say_they_narrow_the_page_shown(page, server):
    connect(page, server.token)
    go(page, "memories")
    expect(page.get_by_label("Created since (UTC, this page only)")).to_be_visible()
    expect(page.locator("#table-time-hint")).to_contain_text("takes no time range")
