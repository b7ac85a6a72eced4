"""The console's views (issue 36): addresses that survive a reload, the memory table, one success formatter.

Driven in headless Chromium against a real ``capsule serve`` (the fixtures of test_console).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from tests.conftest import REPO
from tests.console.test_console import (  # noqa: F401  (fixtures)
    Api,
    browser,
    connect,
    go,
    notice,
    open_project,
    page,
    server,
    settle,
)
from tests.console.test_console_screens import FIXPACK

pytestmark = pytest.mark.slow

ARTIFACTS = REPO / "test-artifacts"
# The side navigation's views, in its order (test_console_a11y checks each too).
VIEWS = (
    "memories",
    "search",
    "projects",
    "solutions",
    "patterns",
    "capture",
    "activity",
    "usage",
    "keys",
    "settings",
    "transfer",
    "sync",
)


@pytest.fixture(autouse=True)
def no_console_errors(page):
    """Beyond test_console's page errors: nothing logged as an error on the console while a test runs."""
    logged: list[str] = []
    page.on("console", lambda msg: logged.append(msg.text) if msg.type == "error" else None)
    yield
    assert logged == [], f"the console logged errors: {logged}"


def visible_views(page) -> list[str]:
    return page.locator(".view").evaluate_all("vs => vs.filter(v => !v.hidden).map(v => v.dataset.view)")


def test_each_view_has_an_address_that_a_link_and_a_reload_return_to(page, server):
    project = "/srv/console-views"
    server.store(project, "a memory so the project exists", pinned=True)
    connect(page, server.token)
    # Every view of the navigation, one at a time, marked as the current one.
    for view in VIEWS:
        go(page, view)
        assert visible_views(page) == [view]
        expect(page.locator(f".nav-link[data-nav='{view}']")).to_have_attribute("aria-current", "page")
        assert page.evaluate("location.hash").startswith(f"#/{view}")

    # A link to a view with its filters: the view and the filters come back, and after a reload too.
    page.goto(server.base + "/ui#/memories?project=" + quote(project, safe="") + "&pinned=1&class=irreplaceable")
    for _ in range(2):
        expect(page.locator("#view-memories")).to_be_visible()
        settle(page)
        assert visible_views(page) == ["memories"]
        expect(page.locator("#table-project")).to_have_value(project)
        expect(page.locator("#table-pinned")).to_have_value("1")
        expect(page.locator("#table-class")).to_have_value("irreplaceable")
        expect(page.locator("#table-body tr[data-id]")).to_have_count(1)
        page.reload()
    page.goto(server.base + "/ui#/settings")
    page.reload()
    expect(page.locator("#view-settings")).to_be_visible()
    assert visible_views(page) == ["settings"]
    page.go_back()  # the history holds the views as they were visited
    expect(page.locator("#view-memories")).to_be_visible()


def test_the_memory_table_sorts_filters_pages_and_acts_on_a_selection(page, server):
    project = "/srv/console-table"
    stored = [
        server.store(
            project,
            f"table memory {n:02d} " + ("even" if n % 2 == 0 else "odd"),
            tags=["even"] if n % 2 == 0 else ["odd"],
            pinned=n % 5 == 0,
            meta={"agent": f"agent-{n % 3}"},
        )
        for n in range(25)
    ]
    by_id = {m["id"]: m for m in stored}
    connect(page, server.token)
    open_project(page, project)
    go(page, "memories")
    rows = page.locator("#table-body tr[data-id]")
    first_page = server.ok("GET", f"/v1/memories?project={quote(project)}&limit=20")
    expect(rows).to_have_count(20)
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.id)") == [m["id"] for m in first_page["memories"]]

    # Pages through the API's cursor, and back.
    page.get_by_role("button", name="Next page").click()
    settle(page)
    expect(rows).to_have_count(5)
    expect(page.get_by_role("button", name="Next page")).to_be_disabled()
    page.get_by_role("button", name="Previous page").click()
    settle(page)
    expect(rows).to_have_count(20)

    # Sorts by a column, both ways; the address keeps the order.
    page.locator("th[data-col='content'] .sort").click()
    settle(page)
    expect(page.locator("th[data-col='content']")).to_have_attribute("aria-sort", "ascending")
    ascending = sorted(first_page["memories"], key=lambda m: m["content"])
    expect(rows.first).to_have_attribute("data-id", ascending[0]["id"])
    page.locator("th[data-col='content'] .sort").click()
    settle(page)
    expect(page.locator("th[data-col='content']")).to_have_attribute("aria-sort", "descending")
    expect(rows.first).to_have_attribute("data-id", ascending[-1]["id"])
    assert "sort=content" in page.evaluate("location.hash")

    # Filters: by tag and agent (on the page read), by pin (asked of the API).
    page.get_by_label("Tag", exact=True).fill("even")
    page.get_by_label("Agent, session or source").fill("agent-0")
    page.get_by_role("button", name="Apply filters").click()
    settle(page)
    expected = [m for m in first_page["memories"] if "even" in m["meta"]["tags"] and m["meta"]["agent"] == "agent-0"]
    expect(rows).to_have_count(len(expected))
    page.get_by_role("button", name="Reset filters").click()
    settle(page)
    page.get_by_label("Pin state").select_option("1")
    page.get_by_role("button", name="Apply filters").click()
    settle(page)
    expect(rows).to_have_count(sum(m["pinned"] for m in stored))

    # A compact row opens to the whole memory.
    page.get_by_role("button", name="Reset filters").click()
    settle(page)
    target = first_page["memories"][0]
    row = page.locator(f"#table-body tr[data-id='{target['id']}']")
    row.locator(".row-toggle").click()
    detail = page.locator(f"#table-body tr.row-detail[data-detail-for='{target['id']}']")
    expect(detail.locator("pre")).to_have_text(target["content"])
    expect(detail).to_contain_text("meta.agent")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "console-memories.png"))

    # Bulk: pin two, export them, forget one (asked first).
    unpinned = [m for m in first_page["memories"] if not m["pinned"]][:2]
    for m in unpinned:
        page.locator(f"#table-body tr[data-id='{m['id']}'] input[type=checkbox]").check()
    expect(page.locator("#table-selected")).to_have_text("2 selected")
    page.get_by_role("button", name="Pin selected", exact=True).click()
    settle(page)
    expect(notice(page)).to_contain_text("2 of 2 selected memories pinned")
    assert all(server.get(m["id"])[1]["memory"]["pinned"] for m in unpinned)
    with page.expect_download() as got:
        page.get_by_role("button", name="Export selected").click()
    saved = json.loads(Path(got.value.path()).read_text())
    assert sorted(m["id"] for m in saved["memories"]) == sorted(m["id"] for m in unpinned)
    page.get_by_role("button", name="Clear selection").click()
    expect(page.locator("#table-selected")).to_have_text("0 selected")
    page.locator(f"#table-body tr[data-id='{unpinned[0]['id']}'] input[type=checkbox]").check()
    page.get_by_role("button", name="Forget selected").click()
    assert server.get(unpinned[0]["id"])[0] == 200  # only asked so far
    page.get_by_role("button", name="Confirm forget").click()
    settle(page)
    expect(notice(page)).to_contain_text("Forgot 1 of 1")
    assert server.get(unpinned[0]["id"])[0] == 404
    expect(page.locator(f"#table-body tr[data-id='{unpinned[0]['id']}']")).to_have_count(0)
    assert unpinned[0]["id"] in by_id


def test_a_solutions_success_is_said_one_way_and_a_patch_is_a_diff(page, server):
    patch = {
        "step_order": 1,
        "kind": "patch",
        "payload": {"file": "app/config.py", "search": "REDIS = 'localhost'\nPORT = 1", "replace": "REDIS = 'cache'"},
        "description": "Point at the cache host",
    }
    fix = server.ok("POST", "/v1/solutions", {**FIXPACK, "title": "Formatter fix", "steps": [patch]})["solution"]
    connect(page, server.token)
    go(page, "solutions")
    item = page.locator(f"#solution-list li[data-id='{fix['id']}']")
    expect(item).to_contain_text("never applied")
    expect(item).not_to_contain_text("0%")
    item.get_by_role("button").click()
    settle(page)
    expect(page.locator("#solution-summary")).to_contain_text("never applied")
    diff = page.locator("#solution-steps li pre[data-render='diff']")
    expect(diff.locator(".diff-del")).to_have_text(["-REDIS = 'localhost'\n", "-PORT = 1\n"])
    expect(diff.locator(".diff-add")).to_have_text(["+REDIS = 'cache'\n"])
    assert "\\n" not in diff.inner_text()

    for worked in (True, True, True, False):
        server.ok("POST", f"/v1/solutions/{fix['id']}/apply", {"success": worked})
    got = server.ok("GET", f"/v1/solutions/{fix['id']}")["solution"]
    said = f"3 of 4 succeeded; {round(100 * got['success_rate'])}% lower bound"
    page.get_by_role("button", name="Load solutions").click()
    settle(page)
    expect(item).to_contain_text(said)
    item.get_by_role("button").click()
    settle(page)
    expect(page.locator("#solution-summary")).to_contain_text(said)
    go(page, "activity")
    page.get_by_role("button", name="Refresh charts").click()
    settle(page)
    expect(page.locator("#chart-solutions-text li").filter(has_text="Formatter fix")).to_have_text(
        "Formatter fix: " + said
    )


def test_api_key_shown_whole_with_a_copy_button(page, server):
    connect(page, server.token)
    go(page, "keys")
    page.get_by_label("Name", exact=True).fill("copy-bot")
    page.get_by_role("button", name="Create key").click()
    settle(page)
    key = page.locator("#new-key").input_value()
    assert key.startswith("cmk_")
    box = page.locator("#new-key").bounding_box()
    assert box and box["width"] > 300  # the whole key in view, not a narrow cut-off field
    page.get_by_role("button", name="Copy key").click()
    expect(page.locator("#copy-key")).to_have_text("Copied")
    expect(page.locator("#whoami")).to_contain_text("tenant")
    rules = server.ok("GET", "/v1/scopes/principals")
    expect(page.locator("#principal-scopes-explanation")).to_have_text(rules["explanation"])
    server.ok("DELETE", "/v1/keys/copy-bot")


def test_export_downloads_the_project_and_import_uploads_it_with_progress(page, server):
    project = "/srv/console-transfer"
    for n in range(3):
        server.store(project, f"transfer memory {n}")
    connect(page, server.token)
    open_project(page, project)
    go(page, "transfer")
    with page.expect_download() as got:
        page.get_by_role("button", name="Export and download").click()
    settle(page)
    text = Path(got.value.path()).read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert got.value.suggested_filename.endswith(".jsonl") and len(lines) >= 4  # the header and the memories
    expect(page.locator("#export-progress")).to_contain_text(f"{len(text.splitlines())} lines")

    # The same file back: sent in parts with the header, counted; nothing written twice.
    exported = ARTIFACTS / "console-export.jsonl"
    ARTIFACTS.mkdir(exist_ok=True)
    exported.write_text(text)
    page.get_by_label("Export file to import (JSON Lines)").set_input_files(str(exported))
    page.get_by_role("button", name="Import file").click()
    settle(page)
    expect(page.locator("#import-progress")).to_contain_text("Sent part 1 of 1")
    expect(page.locator("#import-progress")).to_contain_text("0 refused")
    expect(notice(page)).to_contain_text("Imported console-export.jsonl")
    assert page.locator("#import-bar").evaluate("b => b.value === b.max")
    assert len(server.ok("GET", f"/v1/memories?project={quote(project)}")["memories"]) == 3


def test_a_solution_is_created_edited_and_deleted(page, server):
    connect(page, server.token)
    go(page, "solutions")
    page.locator("#solution-editor summary").click()
    page.get_by_label("Solution title").fill("Restart the worker")
    page.get_by_label("Solution category").fill("queue")
    page.get_by_label("Error it fixes").fill("worker heartbeat lost")
    page.get_by_label("Solution steps, one a line").fill(
        'systemctl restart worker\n{"kind": "env", "payload": {"key": "WORKERS", "value": "4"}}'
    )
    page.get_by_role("button", name="Save solution").click()
    settle(page)
    expect(page.locator("#solution-title")).to_have_text("Restart the worker")
    solution_id = page.locator("#solution-detail").get_attribute("data-id")
    got = server.ok("GET", f"/v1/solutions/{solution_id}")["solution"]
    assert [s["kind"] for s in got["steps"]] == ["cmd", "env"] and got["category"] == "queue"
    expect(page.locator("#solution-steps li").nth(0).locator("code")).to_have_text("systemctl restart worker")
    expect(page.locator("#solution-steps li").nth(1).locator("code")).to_have_text("WORKERS=4")

    page.get_by_role("button", name="Edit solution").click()
    expect(page.get_by_label("Solution steps, one a line")).to_have_value(
        'systemctl restart worker\n{"kind":"env","payload":{"key":"WORKERS","value":"4"}}'
    )
    page.get_by_label("Solution title").fill("Restart the queue worker")
    page.get_by_role("button", name="Save solution").click()
    settle(page)
    expect(page.locator("#solution-title")).to_have_text("Restart the queue worker")
    assert server.ok("GET", f"/v1/solutions/{solution_id}")["solution"]["title"] == "Restart the queue worker"

    page.get_by_role("button", name="Delete solution").click()
    assert server.call("GET", f"/v1/solutions/{solution_id}")[0] == 200  # only asked so far
    page.get_by_role("button", name="Confirm delete").click()
    settle(page)
    expect(page.locator("#solution-detail")).to_be_hidden()
    assert server.call("GET", f"/v1/solutions/{solution_id}")[0] == 404
    expect(page.locator(f"#solution-list li[data-id='{solution_id}']")).to_have_count(0)


def test_the_activity_view_pages_and_filters_the_tenants_audit_log(page, server):
    """GET /v1/audit in the Activity view: newest first, paged by the API's cursor, filtered by project,
    action and memory id (the address keeps the filters), each row a link to its memory."""
    first, second = "/srv/console-audit-a", "/srv/console-audit-b"
    many = [server.store(first, f"audited memory {n:02d}") for n in range(14)]
    for m in many:  # 28 records in the first project: more than a page (25)
        server.ok("POST", f"/v1/memories/{quote(m['id'])}/pin")
        server.ok("POST", f"/v1/memories/{quote(m['id'])}/unpin")
    other = server.store(second, "the other project's memory")
    server.ok("POST", f"/v1/memories/{quote(other['id'])}/pin")
    server.ok("DELETE", f"/v1/memories/{quote(other['id'])}?force=true")
    connect(page, server.token)
    go(page, "activity")
    rows = page.locator("#audit-log-body tr[data-memory]")
    newest = server.ok("GET", "/v1/audit?limit=25")
    expect(rows).to_have_count(25)
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.memory)") == [r["memory_id"] for r in newest["records"]]
    expect(page.locator("#audit-log-explanation")).to_have_text(newest["explanation"])

    # Filtered by project: 28 records, a page of 25 and one of 3, through the API's cursor.
    page.get_by_label("Audit project").fill(first)
    page.get_by_role("button", name="Show audit log").click()
    settle(page)
    expect(rows).to_have_count(25)
    page.get_by_role("button", name="Next audit page").click()
    settle(page)
    expect(rows).to_have_count(3)
    expect(page.get_by_role("button", name="Next audit page")).to_be_disabled()
    oldest = server.ok("GET", f"/v1/audit?project={quote(first)}&limit=100")["records"][25:]
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.memory)") == [r["memory_id"] for r in oldest]
    page.get_by_role("button", name="Previous audit page").click()
    settle(page)
    expect(rows).to_have_count(25)

    # By action within the other project; the address keeps the filters through a reload.
    page.get_by_label("Audit project").fill(second)
    page.get_by_label("Audit action").select_option("forget")
    page.get_by_role("button", name="Show audit log").click()
    settle(page)
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-memory", other["id"])
    expect(rows.first).to_contain_text("forget")
    assert "audit_project=" in page.evaluate("location.hash") and "action=forget" in page.evaluate("location.hash")
    page.reload()
    expect(page.locator("#view-activity")).to_be_visible()
    settle(page)
    expect(page.get_by_label("Audit project")).to_have_value(second)
    expect(page.get_by_label("Audit action")).to_have_value("forget")
    expect(rows).to_have_count(1)

    # By memory id: its two records; its link opens the memory.
    target = many[3]
    page.get_by_role("button", name="All records").click()
    settle(page)
    page.get_by_label("Audit memory id").fill(target["id"])
    page.get_by_role("button", name="Show audit log").click()
    settle(page)
    expect(rows).to_have_count(2)
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.action)") == ["unpin", "pin"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "console-audit.png"))
    rows.first.get_by_role("link", name=f"Open memory {target['id']}").click()
    expect(page.locator("#view-projects")).to_be_visible()
    expect(page.locator("#detail")).to_be_visible()
    settle(page)
    expect(page.locator("#detail-content")).to_have_text(target["content"])
    expect(page.locator("#project-name")).to_have_text(first)


def test_a_key_is_created_with_its_scope_and_listed_with_it(page, server):
    connect(page, server.token)
    go(page, "keys")
    page.get_by_label("Name", exact=True).fill("scoped-bot")
    page.get_by_label("Key access").select_option("read")
    page.get_by_label("Key projects").fill("/srv/scoped/*, tools")
    page.get_by_label("Key subjects").fill("bob")
    page.get_by_label("Key sees").select_option("shared")
    page.get_by_role("button", name="Create key").click()
    settle(page)
    key = page.locator("#new-key").input_value()
    assert key.startswith("cmk_")
    expect(notice(page)).to_contain_text("scope: read")
    wanted = {"access": "read", "projects": ["/srv/scoped/*", "tools"], "subjects": ["bob"], "sees": "shared"}
    listed = {k["name"]: k for k in server.ok("GET", "/v1/keys")["keys"]}
    assert listed["scoped-bot"]["scope"] == wanted
    row = page.locator("#key-list li[data-name='scoped-bot']")
    expect(row.locator(".key-scope-text")).to_have_text("scope: " + listed["scoped-bot"]["scope_text"])
    assert json.loads(row.locator(".key-scope-text").get_attribute("data-scope")) == wanted
    expect(page.get_by_label("Key access")).to_have_value("admin")  # the form is ready for the next key
    expect(page.get_by_label("Key projects")).to_have_value("")

    # The scope holds: read-only, its projects only.
    with_key = Api(server.base, key)
    assert with_key.call("GET", "/v1/memories?project=" + quote("/srv/scoped/one", safe=""))[0] == 200
    assert with_key.call("GET", "/v1/memories?project=" + quote("/srv/elsewhere", safe=""))[0] == 403
    assert (
        with_key.call("POST", "/v1/memories", {"project": "/srv/scoped/one", "content": "x", "subject": "bob"})[0]
        == 403
    )
    me = with_key.ok("GET", "/v1/scopes/me")
    assert me["scope"]["access"] == "read" and me["scope"]["projects"] == wanted["projects"]

    # A key made with the form left as it is has full access, and says so.
    page.get_by_label("Name", exact=True).fill("full-bot")
    page.get_by_role("button", name="Create key").click()
    settle(page)
    expect(page.locator("#key-list li[data-name='full-bot'] .key-scope-text")).to_have_text("scope: full")
    for name in ("scoped-bot", "full-bot"):
        server.ok("DELETE", f"/v1/keys/{name}")
