"""The console's further screens (issue 19 item 10), in Debian's headless Chromium against a real
``capsule serve``: memory detail, the API's forgotten list with restore, project settings,
solutions with their steps, the dashboard chart; at desktop width and at 390 px.

Same server and browser fixtures as test_console.py; this module's page also records every
request, and fails a test whose page asked any host but the gateway.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.sync_api import expect

from tests.conftest import REPO
from tests.console.test_console import (  # noqa: F401  (fixtures)
    CHROMIUM,
    UNNAMED_CONTROLS,
    WAIT_MS,
    Api,
    browser,
    card,
    connect,
    go,
    notice,
    open_project,
    server,
    settle,
)

pytestmark = pytest.mark.slow

ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture
def page(browser, server: Api):  # noqa: F811
    yield from _page(browser, server, {"width": 1360, "height": 1000})


@pytest.fixture
def narrow(browser, server: Api):  # noqa: F811
    yield from _page(browser, server, {"width": 390, "height": 844})


def _page(browser, server: Api, viewport: dict):  # noqa: F811
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    errors: list[str] = []
    hosts: set[str] = set()
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    opened.on("request", lambda r: hosts.add(urlsplit(r.url).netloc) if not r.url.startswith("data:") else None)
    opened.goto(server.base + "/ui")
    # A test that provokes an API refusal on purpose names its status here; Chromium logs every
    # 4xx answer as a console error, and any other error still fails the test.
    opened.expected_statuses = set()
    yield opened
    context.close()
    allowed = {
        f"Failed to load resource: the server responded with a status of {status}"
        for status in opened.expected_statuses
    }
    errors = [e for e in errors if not any(e.startswith(a) for a in allowed)]
    assert errors == [], f"the page logged errors: {errors}"
    assert hosts == {urlsplit(server.base).netloc}, f"the page asked other hosts: {hosts}"


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"console-{name}.png"
    path.unlink(missing_ok=True)
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 5_000


def detail_value(page, field: str):
    return page.locator(f"#detail-meta [data-field='{field}'] dd")


def test_memory_detail_shows_the_full_content_and_every_field(page, server):
    project = "/srv/console-detail"
    long_text = "Deploy notes. " + " ".join(f"line{n}" for n in range(300))  # well over the card's 700
    memory = server.store(
        project,
        long_text,
        pinned=True,
        tags=["deploy", "notes"],
        meta={"author": "ana", "session": "s-42", "task": "release 1.2", "source": "chat", "ticket": "OPS-7"},
    )
    server.ok("POST", f"/v1/memories/{quote(memory['id'])}/feedback", {"helpful": True})
    connect(page, server.token)
    open_project(page, project)
    card(page, "memory-list", memory["id"]).locator("[data-action='Details']").click()
    settle(page)
    expect(page.locator("#detail")).to_be_visible()
    expect(page.locator("#detail-title")).to_be_focused()
    expect(page.locator("#detail-content")).to_have_text(long_text)  # all of it, not the card's excerpt
    got = server.get(memory["id"])[1]
    expect(page.locator("#detail-explanation")).to_have_text(got["explanation"])
    for field, value in [
        ("id", memory["id"]),
        ("project", project),
        ("author", "ana"),
        ("session", "s-42"),
        ("task", "release 1.2"),
        ("source", "chat"),
        ("pinned", "yes"),
        ("created", got["memory"]["created_at"]),
        ("occurred", got["memory"]["occurred_at"]),
        ("tags", "#deploy #notes"),
        ("meta.ticket", "OPS-7"),
    ]:
        expect(detail_value(page, field)).to_have_text(value)
    expect(detail_value(page, "feedback")).to_have_text("▲ 1 helpful · ▼ 0 not helpful")
    assert page.evaluate(UNNAMED_CONTROLS) == []
    shot(page, "detail")
    page.get_by_role("button", name="Close detail").click()
    expect(page.locator("#detail")).to_be_hidden()


def test_memory_detail_of_an_ingested_chunk_names_its_place(page, server):
    project = "/srv/console-detail-chunk"
    text = "\n\n".join(f"Part {n}. " + " ".join(f"w{n}x{i}" for i in range(150)) for n in range(12))
    ingested = server.ok("POST", "/v1/memories/ingest", {"project": project, "text": text, "path": "docs/a.md"})
    connect(page, server.token)
    open_project(page, project)
    card(page, "memory-list", ingested["ids"][1]).locator("[data-action='Details']").click()
    expect(detail_value(page, "chunk")).to_have_text(f"2 of {ingested['chunks']}")
    expect(detail_value(page, "path")).to_have_text("docs/a.md")


def test_the_forgotten_list_comes_from_the_api_and_restores(page, server):
    project = "/srv/console-forgotten-api"
    keep = server.store(project, "a memory that stays")
    gone = server.store(project, "forgotten before this visit, by another client")
    server.ok("DELETE", f"/v1/memories/{quote(gone['id'])}")
    connect(page, server.token)
    open_project(page, project)
    expect(page.locator("#forgotten-list li")).to_have_count(0)  # this tab forgot nothing itself
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "forgotten=" in r.url else None)
    page.get_by_role("button", name="Forgotten", exact=True).click()
    settle(page)
    assert any("forgotten=true" in url for url in asked)
    rows = page.locator("#memory-list li.card-item")
    expect(rows).to_have_count(1)
    shown = card(page, "memory-list", gone["id"])
    expect(shown).to_contain_text("forgotten before this visit")
    expect(page.locator("#list-explanation")).to_have_text(
        server.ok("GET", f"/v1/memories?project={quote(project)}&forgotten=true")["explanation"]
    )
    expect(shown.locator("[data-action='Pin']")).to_have_count(0)  # only details and restore
    shown.locator("[data-action='Details']").click()
    expect(detail_value(page, "forgotten")).not_to_have_text("")
    shot(page, "forgotten")

    shown.locator("[data-action='Restore']").click()
    expect(notice(page)).to_contain_text(f"Restored {gone['id']}")
    expect(rows).to_have_count(0)
    assert server.get(gone["id"])[0] == 200
    page.get_by_role("button", name="Recent", exact=True).click()
    expect(rows).to_have_count(2)
    assert {keep["id"], gone["id"]} == set(rows.evaluate_all("rs => rs.map(r => r.dataset.id)"))


def _limit_of(server, project: str) -> int:
    return next(p for p in server.ok("GET", "/v1/projects")["projects"] if p["project"] == project)["retention_limit"]


def test_project_settings_read_and_set_the_retention_limit(page, server):
    project = "/srv/console-settings"
    server.store(project, "a memory so the project exists")
    connect(page, server.token)
    open_project(page, project)
    go(page, "settings")
    limit = page.get_by_label("Retention limit")
    expect(limit).to_have_value(str(_limit_of(server, project)))
    assert limit.get_attribute("min") == "1" and limit.get_attribute("max") == "1000000"

    sent = []
    page.on("request", lambda r: sent.append(r.url) if r.url.endswith("/settings") else None)
    for bad in ("0", "1000001", "2.5"):
        limit.fill(bad)
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.locator("#alert")).to_contain_text("Settings failed")
        expect(limit).to_be_focused()
    assert sent == [] and _limit_of(server, project) != 7  # refused on the page, nothing sent

    limit.fill("7")
    page.get_by_role("button", name="Save", exact=True).click()
    settle(page)
    expect(page.locator("#alert")).to_have_class(re.compile(r"\bis-idle\b"))
    assert _limit_of(server, project) == 7
    expect(limit).to_have_value("7")
    shot(page, "settings")


FIXPACK = {
    "title": "Point REDIS_URL at the private host",
    "category": "network",
    "description": "The app connects to a local Redis that is not there.",
    "signatures": [{"text": "connect ECONNREFUSED 127.0.0.1:6379"}],
    "steps": [
        {
            "step_order": 1,
            "kind": "cmd",
            "payload": {"command": "railway variables set REDIS_URL=redis://private:6379"},
            "description": "Set the variable",
        },
        {"step_order": 2, "kind": "cmd", "payload": {"command": "railway redeploy"}},
    ],
    "checks": [{"check_order": 1, "cmd": "redis-cli -u $REDIS_URL ping", "expect_substring": "PONG"}],
}


def test_solutions_list_and_detail_with_steps_in_order(page, server):
    created = server.ok("POST", "/v1/solutions", FIXPACK)["solution"]
    connect(page, server.token)
    go(page, "solutions")
    page.get_by_role("button", name="Load solutions").click()
    settle(page)
    item = page.locator(f"#solution-list li[data-id='{created['id']}']")
    expect(item).to_contain_text(FIXPACK["title"])
    expect(item).to_contain_text("network · 2 steps · never applied")
    item.get_by_role("button").click()
    settle(page)
    expect(page.locator("#solution-title")).to_have_text(FIXPACK["title"])
    expect(page.locator("#solution-title")).to_be_focused()
    expect(page.locator("#solution-description")).to_have_text(FIXPACK["description"])
    steps = page.locator("#solution-steps li")
    expect(steps).to_have_count(2)
    expect(steps.nth(0)).to_contain_text("Set the variable")
    expect(steps.nth(0).locator("code")).to_have_text(FIXPACK["steps"][0]["payload"]["command"])
    expect(steps.nth(1).locator("code")).to_have_text("railway redeploy")
    expect(page.locator("#solution-checks li")).to_contain_text('expects "PONG"')
    shot(page, "solutions")


def test_dashboard_draws_one_bar_per_project_with_a_text_equivalent(page, server):
    big, small = "/srv/console-dash-big", "/srv/console-dash-small"
    for n in range(4):
        server.store(big, f"dashboard memory {n}", pinned=n == 0)
    server.store(small, "dashboard memory alone")
    connect(page, server.token)
    go(page, "activity")
    expect(page.locator("#dashboard-chart svg")).to_have_count(1)
    said = page.locator("#dashboard-text li")  # what a screen reader reads instead of the picture
    expect(said.filter(has_text=big)).to_have_text(f"{big}: 4 memories, 1 pinned")
    expect(said.filter(has_text=small)).to_have_text(f"{small}: 1 memory, 0 pinned")
    widths = {
        p: float(page.locator(f"#dashboard-chart rect[data-project='{p}']").get_attribute("width"))
        for p in (big, small)
    }
    assert widths[big] == pytest.approx(4 * widths[small], rel=0.01)
    assert page.locator("#dashboard-chart image, #dashboard-chart use").count() == 0  # nothing fetched
    shot(page, "dashboard")


def test_the_new_screens_work_at_390_px(narrow, server):
    project = "/srv/console-narrow"
    memory = server.store(project, "narrow screen memory " + "x" * 200, tags=["narrow"], meta={"author": "ana"})
    server.ok("POST", "/v1/solutions", {**FIXPACK, "title": "Narrow screen fix"})
    server.ok("POST", "/v1/memories/capture", {"project": project, "events": CAPTURE_EVENTS})
    page = narrow
    connect(page, server.token)
    open_project(page, project)
    card(page, "memory-list", memory["id"]).locator("[data-action='Details']").click()
    expect(detail_value(page, "author")).to_have_text("ana")
    page.get_by_role("button", name="Edit", exact=True).click()
    page.get_by_role("button", name="History and audit trail").click()
    expect(page.locator("#history-list li.version")).to_have_count(1)
    go(page, "solutions")
    page.get_by_role("button", name="Load solutions").click()
    page.locator("#solution-list li", has_text="Narrow screen fix").first.get_by_role("button").click()
    expect(page.locator("#solution-steps li")).to_have_count(2)
    go(page, "search")
    page.locator("#search-filters summary").click()
    page.get_by_label("Query").fill("narrow")
    page.get_by_role("button", name="Search", exact=True).click()
    settle(page)
    go(page, "keys")
    page.get_by_role("button", name="Load keys").click()
    go(page, "activity")
    page.get_by_role("button", name="Refresh charts").click()
    settle(page)
    expect(page.locator("#chart-growth svg")).to_have_count(1)
    go(page, "patterns")
    page.get_by_role("button", name="Show golden paths").click()
    settle(page)
    go(page, "memories")
    expect(page.locator("#table-body tr[data-id]")).to_have_count(1)
    go(page, "capture")
    expect(page.locator("#candidate-list li.cand")).to_have_count(2)
    page.locator("#candidate-list li.cand [data-action='Approve']").first.click()  # its form, at 390 px
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    wide = page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
        .map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))
        .slice(0, 8)""")
    assert overflow <= 0, f"the page is {overflow}px wider than a 390px screen: {wide}"
    assert page.evaluate(UNNAMED_CONTROLS) == []
    shot(page, "narrow")


def _open_detail(page, memory_id: str) -> None:
    card(page, "memory-list", memory_id).locator("[data-action='Details']").click()
    settle(page)
    expect(page.locator("#detail")).to_be_visible()


def test_edit_content_tags_and_class_with_if_match_then_history_and_revert(page, server):
    project = "/srv/console-edit"
    memory = server.store(project, "the first words", tags=["one"])
    connect(page, server.token)
    open_project(page, project)
    _open_detail(page, memory["id"])
    sent = []
    page.on("request", lambda r: sent.append((r.method, r.headers.get("if-match"))) if r.method == "PATCH" else None)
    page.get_by_role("button", name="Edit", exact=True).click()
    expect(page.get_by_label("Memory text", exact=True)).to_be_focused()
    page.locator("#edit-tags").fill("x" * 65)  # over the API's 64 characters: refused here, nothing sent
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#alert")).to_contain_text("over 64 characters")
    expect(page.locator("#edit-tags")).to_be_focused()
    assert sent == []

    page.locator("#edit-content").fill("the second words")
    page.locator("#edit-tags").fill("two, three")
    page.locator("#edit-retention").select_option("permanent")
    page.locator("#edit-reason").fill("clearer wording")
    page.get_by_role("button", name="Save changes").click()
    settle(page)
    expect(notice(page)).to_contain_text("Version 2 saved")
    assert sent == [("PATCH", f'"{memory["sha256"]}"')]  # the sha256 as read, as If-Match
    now = server.get(memory["id"])[1]["memory"]
    assert (now["content"], now["meta"]["tags"], now["retention"]) == (
        "the second words",
        ["two", "three"],
        "permanent",
    )
    expect(page.locator("#detail-content")).to_have_text("the second words")
    expect(detail_value(page, "retention")).to_have_text("permanent")
    expect(card(page, "memory-list", memory["id"])).to_contain_text("the second words")

    # Another client changes it: this page's copy is stale, so its save is refused (412), nothing changed.
    status, _ = server.call("PATCH", f"/v1/memories/{quote(memory['id'])}", {"content": "changed by another client"})
    assert status == 200
    page.expected_statuses.add(412)
    page.get_by_role("button", name="Edit", exact=True).click()
    page.locator("#edit-content").fill("a stale edit")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#alert")).to_contain_text("changed elsewhere")
    expect(page.locator("#alert")).to_contain_text("412")
    assert server.get(memory["id"])[1]["memory"]["content"] == "changed by another client"
    expect(page.locator("#detail-reload")).to_be_focused()
    page.locator("#detail-reload").click()
    settle(page)
    expect(page.locator("#detail-content")).to_have_text("changed by another client")
    expect(page.locator("#edit-content")).to_have_value("changed by another client")

    page.get_by_role("button", name="History and audit trail").click()
    settle(page)
    versions = page.locator("#history-list li.version")
    expect(versions).to_have_count(3)
    expect(versions.nth(0)).to_contain_text("replaced by local: clearer wording")  # the audit of each change
    expect(versions.nth(1)).to_contain_text("replaced by local: changed content")
    expect(versions.nth(2)).to_contain_text("(current)")
    expect(versions.nth(2).locator("[data-action='Revert']")).to_have_count(0)
    assert page.evaluate(UNNAMED_CONTROLS) == []
    shot(page, "edit-history")
    versions.nth(0).get_by_role("button", name="Revert to version 1").click()
    settle(page)
    expect(notice(page)).to_contain_text("Version 1 is back")
    assert server.get(memory["id"])[1]["memory"]["content"] == "the first words"
    expect(page.locator("#detail-content")).to_have_text("the first words")
    expect(versions).to_have_count(4)

    # The memory's audit records (GET /v1/audit?memory_id=), oldest first, each change with who and why.
    page.get_by_role("button", name="Audit records").click()
    settle(page)
    audit = server.ok("GET", f"/v1/audit?memory_id={quote(memory['id'])}&limit=100")["records"][::-1]
    assert len(audit) >= 3  # the console's edit, the other client's, the revert
    shown = page.locator("#audit-list li")
    expect(shown).to_have_count(len(audit))
    for n, row in enumerate(audit):
        expect(shown.nth(n)).to_contain_text(row["action"])
        expect(shown.nth(n)).to_contain_text(row["at"])
    expect(page.locator("#audit-list")).to_contain_text("clearer wording")
    expect(page.locator("#audit-title")).to_be_focused()


def test_search_sends_every_filter_and_mode_and_shows_each_hits_score_breakdown(page, server):
    project = "/srv/console-search-filters"
    old = server.store(
        project,
        "the cache key was the user id",
        occurred_at="2026-03-01T10:00:00Z",
        meta={"category": "cache", "component": "api"},
        path="docs/cache.md",
    )
    new = server.store(
        project,
        "the cache key is the user id and the locale",
        supersedes=old["id"],
        meta={"category": "cache", "component": "api"},
        path="docs/cache.md",
        occurred_at="2026-03-05T10:00:00Z",
        retention="permanent",
    )
    server.store(project, "the cache of images lives on the CDN", meta={"category": "cdn"}, path="ops/cdn.md")
    connect(page, server.token)
    open_project(page, project)
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/v1/memories/search") else None)
    go(page, "search")
    page.get_by_label("Query").fill("cache key")
    page.locator("#search-filters summary").click()
    page.get_by_label("Minimum relevance (0 to 1)").fill("2")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#alert")).to_contain_text("Minimum relevance is a number from 0 to 1")
    expect(page.get_by_label("Minimum relevance (0 to 1)")).to_be_focused()
    assert sent == []  # refused on the page

    page.get_by_label("Mode").select_option("bm25")
    page.get_by_label("With tags").fill("")
    page.get_by_label("Category", exact=True).fill("cache")
    page.get_by_label("Component").fill("api")
    page.get_by_label("Path starts with").fill("docs/")
    page.locator("#search-retention").select_option("permanent")
    page.get_by_label("Happened since (UTC)").fill("2026-03-02T00:00:00")
    page.get_by_label("Happened before (UTC)").fill("2026-04-01T00:00:00")
    page.get_by_label("As of (UTC; default now)").fill("2026-06-01T12:00:00")
    page.get_by_label("Minimum relevance (0 to 1)").fill("0.05")
    page.get_by_label("Weight: keyword (0 to 1)").fill("0.5")
    page.get_by_label("Weight: recency (0 to 1)").fill("0")
    page.get_by_label("Show what each hit superseded").check()
    page.get_by_role("button", name="Search", exact=True).click()
    settle(page)
    want = {
        "query": "cache key",
        "mode": "bm25",
        "k": 8,
        "project": project,
        "filters": {
            "category": "cache",
            "component": "api",
            "path_prefix": "docs/",
            "retention": "permanent",
            "since": "2026-03-02T00:00:00.000Z",
            "until": "2026-04-01T00:00:00.000Z",
        },
        "as_of": "2026-06-01T12:00:00.000Z",
        "min_relevance": 0.05,
        "weights": {"bm25": 0.5, "time": 0},
        "include_superseded": True,
    }
    assert sent == [want]
    answer = server.ok("POST", "/v1/memories/search", want)
    assert [h["id"] for h in answer["results"]] == [new["id"]]  # the filters did their work on the server
    hits = page.locator("#hit-list li.card-item")
    expect(hits).to_have_count(1)
    hit, shown = answer["results"][0], card(page, "hit-list", new["id"])
    expect(shown.locator(".score-value")).to_have_text(f"{hit['score']:.3f}")
    for key in ("vector", "bm25", "time", "feedback", "outcome", "boost"):
        expect(shown.locator(f"[data-component='{key}'] .comp-value")).to_have_text(f"{hit['components'][key]:.3f}")
    expect(shown.locator(".superseded li")).to_have_text("superseded: " + old["content"])
    expect(shown.locator(".badge-retention")).to_have_text("permanent")
    expect(page.locator("#search-explanation")).to_have_text(answer["explanation"])
    shot(page, "search-filters")

    page.get_by_role("button", name="Clear filters").click()
    page.get_by_role("button", name="Search", exact=True).click()
    settle(page)
    assert sent[-1] == {"query": "cache key", "mode": "bm25", "k": 8, "project": project}


def _drop(page, selector: str, files: list[tuple[str, str]]) -> None:
    """A drag-and-drop of files, as the browser delivers it (a DataTransfer on a drop event)."""
    transfer = page.evaluate_handle(
        """(files) => {
        const dt = new DataTransfer();
        for (const [name, text] of files) dt.items.add(new File([text], name, { type: 'text/plain' }));
        return dt;
    }""",
        files,
    )
    page.dispatch_event(selector, "drop", {"dataTransfer": transfer})


def test_ingest_by_file_upload_and_drag_and_drop_with_chunk_numbers(page, server):
    project = "/srv/console-ingest"
    server.store(project, "a memory so the project exists")
    connect(page, server.token)
    open_project(page, project)
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/v1/memories/ingest") else None)
    long_text = "\n\n".join(f"Section {n}. " + " ".join(f"s{n}w{i}" for i in range(160)) for n in range(8))
    page.get_by_label("Files to ingest").set_input_files(
        [
            {"name": "guide.md", "mimeType": "text/markdown", "buffer": long_text.encode()},
            {"name": "big.log", "mimeType": "text/plain", "buffer": b"x" * (1024 * 1024 + 1)},  # over 1 MiB
            {"name": "image.png", "mimeType": "image/png", "buffer": b"\x89PNG\r\n\x1a\n\xff\xfe\x00"},  # not text
        ]
    )
    page.locator("#ingest-tags").fill("guide")
    page.get_by_role("button", name="Ingest", exact=True).click()
    expect(page.locator("#ingest-progress")).to_have_text("Ingested 1 of 3 files.")
    settle(page)
    assert [b["path"] for b in sent] == ["guide.md"]  # the refused two were never sent
    assert sent[0]["text"] == long_text and sent[0]["tags"] == ["guide"] and sent[0]["project"] == project
    rows = page.locator("#ingest-results > li")
    expect(rows.nth(1)).to_contain_text("1048577 bytes; the limit is 1 MiB")
    expect(rows.nth(2)).to_contain_text("not UTF-8 text")
    chunks = rows.nth(0).locator(".chunk-ids li")
    listed = server.ok("GET", f"/v1/memories?project={quote(project)}&limit=100")["memories"]
    stored = sorted((m for m in listed if m["path"] == "guide.md"), key=lambda m: m["chunk"]["index"])
    assert len(stored) > 1
    expect(chunks).to_have_count(len(stored))
    for n, memory in enumerate(stored):
        expect(chunks.nth(n)).to_contain_text(f"chunk {n + 1} of {len(stored)}")
        assert chunks.nth(n).get_attribute("data-id") == memory["id"]
    assert stored[0]["meta"]["tags"] == ["guide"]
    chunks.nth(1).get_by_role("button").click()
    expect(detail_value(page, "chunk")).to_have_text(f"2 of {len(stored)}")
    shot(page, "ingest")

    _drop(page, "#dropzone", [("dropped.txt", "dropped by drag and drop")])
    expect(page.locator("#ingest-progress")).to_have_text("Ingested 1 of 1 file.")
    assert sent[-1]["path"] == "dropped.txt" and sent[-1]["text"] == "dropped by drag and drop"
    expect(page.locator("#memory-list")).to_contain_text("dropped by drag and drop")


def test_import_a_fixpack_file_record_outcomes_then_golden_paths_and_patterns(page, server):
    project = "/srv/console-fixpacks"
    server.store(project, "a memory so the project exists")
    fixpack = {**FIXPACK, "title": "Start the local Redis", "_comment": "kept as written"}
    connect(page, server.token)
    open_project(page, project)
    go(page, "solutions")
    page.get_by_label("Import a fixpack file (JSON)").set_input_files(
        {"name": "bad.json", "mimeType": "application/json", "buffer": b"[1, 2]"}
    )
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator("#alert")).to_contain_text("one JSON object")
    page.get_by_label("Import a fixpack file (JSON)").set_input_files(
        {"name": "redis.json", "mimeType": "application/json", "buffer": json.dumps(fixpack).encode()}
    )
    page.get_by_role("button", name="Import", exact=True).click()
    settle(page)
    expect(notice(page)).to_contain_text("Kept as written: _comment")
    expect(page.locator("#solution-title")).to_have_text("Start the local Redis")
    solution_id = page.locator("#solution-detail").get_attribute("data-id")
    expect(page.locator(f"#solution-list li[data-id='{solution_id}']")).to_have_count(1)

    page.get_by_role("button", name="Record outcome").click()
    expect(page.locator("#alert")).to_contain_text("worked or failed")
    for worked in (True, True, True, False):
        page.get_by_label("It worked" if worked else "It failed").check()
        page.get_by_label("Pattern tag (optional)").fill("redis-refused")
        page.get_by_label("The error it was applied to (optional)").fill("connect ECONNREFUSED 127.0.0.1:6379")
        page.get_by_role("button", name="Record outcome").click()
        settle(page)
        expect(page.locator("#notice")).not_to_have_class(re.compile(r"\bis-idle\b"))
    got = server.ok("GET", f"/v1/solutions/{solution_id}")["solution"]
    assert (got["success_count"], got["failure_count"]) == (3, 1)
    rate = round(100 * got["success_rate"])
    expect(page.locator("#solution-summary")).to_contain_text(f"3 of 4 succeeded; {rate}% lower bound")

    go(page, "patterns")
    page.get_by_label("Golden paths: fixes applied at least (times)").fill("0")
    page.get_by_role("button", name="Show golden paths").click()
    expect(page.locator("#alert")).to_contain_text("whole number from 1")
    page.get_by_label("Golden paths: fixes applied at least (times)").fill("3")
    page.get_by_role("button", name="Show golden paths").click()
    settle(page)
    golden = server.ok("GET", "/v1/patterns/golden-paths?min_applications=3")
    assert [p["pattern"]["tag"] for p in golden["paths"]] == ["redis-refused"]
    expect(page.locator("#golden-list li[data-tag='redis-refused']")).to_contain_text(
        f"→ Start the local Redis: 3 of 4 succeeded; {round(100 * golden['paths'][0]['success_rate'])}% lower bound"
    )
    expect(page.locator("#patterns-explanation")).to_have_text(golden["explanation"])
    shot(page, "fixpacks-golden")

    page.get_by_label("Which known patterns does this error match?").fill("connect ECONNREFUSED 127.0.0.1:6379")
    page.get_by_role("button", name="Match patterns").click()
    settle(page)
    matched = server.ok("POST", "/v1/patterns/detect", {"error": "connect ECONNREFUSED 127.0.0.1:6379"})
    expect(page.locator("#patterns-explanation")).to_have_text(matched["explanation"])
    for m in matched["results"]:
        expect(page.locator(f"#pattern-list li[data-tag='{m['pattern']['tag']}']")).to_contain_text(
            f"score {m['score']:.3f}"
        )
    page.get_by_role("button", name="Mine patterns from the memories").click()
    settle(page)
    mined = server.ok("POST", "/v1/patterns/mine", {"min_occurrences": 2, "k": 20})  # idempotent: the same again
    expect(page.locator("#pattern-list li[data-tag]")).to_have_count(len(mined["patterns"]))
    expect(notice(page)).to_contain_text(f"Scanned {mined['scanned']} failure/error memories")


def test_api_keys_list_create_shown_once_and_revoke_with_confirmation(page, server):
    connect(page, server.token)
    go(page, "keys")
    page.get_by_role("button", name="Load keys").click()
    settle(page)
    page.get_by_label("Name", exact=True).fill("bad name!")
    page.get_by_role("button", name="Create key").click()
    expect(page.locator("#alert")).to_contain_text("A key name is 1 to 64 letters")
    expect(page.get_by_label("Name", exact=True)).to_be_focused()
    page.get_by_label("Name", exact=True).fill("console-bot")
    page.get_by_label("Tenant").fill("team-a")
    page.get_by_role("button", name="Create key").click()
    settle(page)
    key = page.locator("#new-key").input_value()
    assert key.startswith("cmk_")
    expect(page.locator("#new-key")).to_be_focused()
    listed = server.ok("GET", "/v1/keys")["keys"]
    assert [(k["name"], k["tenant"]) for k in listed] == [("console-bot", "team-a")]
    row = page.locator("#key-list li[data-name='console-bot']")
    expect(row).to_contain_text("tenant team-a")
    expect(page.locator("#key-list")).not_to_contain_text(key)  # the key itself only in the box, once
    with_key = Api(server.base, key)
    assert with_key.call("GET", "/v1/projects")[0] == 200
    assert with_key.call("GET", "/v1/keys")[0] == 403  # a named key cannot manage keys
    assert page.evaluate(UNNAMED_CONTROLS) == []
    shot(page, "keys")

    row.get_by_role("button", name="Revoke key console-bot").click()
    row.get_by_role("button", name="Keep key console-bot").click()
    assert with_key.call("GET", "/v1/projects")[0] == 200  # cancelled: nothing revoked
    row.get_by_role("button", name="Revoke key console-bot").click()
    row.get_by_role("button", name="Confirm revoking key console-bot").click()
    settle(page)
    expect(notice(page)).to_contain_text("Revoked API key 'console-bot'")
    expect(page.locator("#key-list li[data-name='console-bot']")).to_have_count(0)
    assert with_key.call("GET", "/v1/projects")[0] == 401
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#new-key")).to_have_value("")  # shown once, not to whoever has the tab next
    expect(page.locator("#key-list li")).to_have_count(0)


def test_trend_charts_memories_over_time_latency_feedback_and_solution_success(page, server):
    grow, other = "/srv/console-trend-a", "/srv/console-trend-b"
    a = [server.store(grow, f"trend memory {n}") for n in range(3)]
    server.store(other, "trend memory elsewhere")
    for memory, helpful in ((a[0], True), (a[1], True), (a[2], False)):
        server.ok("POST", f"/v1/memories/{quote(memory['id'])}/feedback", {"helpful": helpful})
    fix = server.ok("POST", "/v1/solutions", {**FIXPACK, "title": "Trend fix"})["solution"]
    for worked in (True, True, False):
        server.ok("POST", f"/v1/solutions/{fix['id']}/apply", {"success": worked})
    connect(page, server.token)
    open_project(page, grow)
    go(page, "search")
    for query in ("trend memory", "elsewhere"):
        page.get_by_label("Query").fill(query)
        page.get_by_role("button", name="Search", exact=True).click()
        settle(page)
    asked = []
    page.on("request", lambda r: asked.append(r.url))
    go(page, "activity")
    page.get_by_role("button", name="Refresh charts").click()
    settle(page)
    assert all(urlsplit(u).netloc == urlsplit(server.base).netloc for u in asked)
    assert sum("/v1/memories?" in u for u in asked) <= 5 * 3  # bounded reads
    day = a[0]["created_at"][:10]
    growth = page.locator("#chart-growth-text li")
    expect(growth.filter(has_text=grow)).to_have_text(f"{grow}: 3 memories by {day}")
    # The open project and the largest others, five at most; every project here was stored today.
    held = [p for p in server.ok("GET", "/v1/projects")["projects"] if p["memories"]]
    expect(growth).to_have_count(min(5, len(held)))
    assert other  # a second project, so the chart has more than one line to tell apart
    expect(page.locator(f"#chart-growth path[data-series='{grow}']")).to_have_count(1)
    latency = page.locator("#chart-latency-text li")
    expect(latency).to_have_count(2)
    expect(latency.nth(0)).to_have_text(re.compile(r"^search 1: \d+ ms$"))
    expect(page.locator("#chart-feedback-text li").filter(has_text=grow)).to_have_text(
        f"{grow}: 2 helpful, 1 not helpful (67% helpful)"
    )
    # The same words and the same number as the solution's list and detail: the API's lower bound.
    rate = server.ok("GET", f"/v1/solutions/{fix['id']}")["solution"]["success_rate"]
    expect(page.locator("#chart-solutions-text li").filter(has_text="Trend fix")).to_have_text(
        f"Trend fix: 2 of 3 succeeded; {round(100 * rate)}% lower bound"
    )
    width = float(page.locator("#chart-solutions rect.bar-all[data-label='Trend fix']").get_attribute("width"))
    track = float(page.locator("#chart-solutions rect.bar-track").first.get_attribute("width"))
    assert width == pytest.approx(track * rate, rel=0.01)
    assert page.locator("#charts image, #charts use, #charts foreignObject").count() == 0
    go(page, "search")
    page.get_by_label("Query").fill("one more")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(latency).to_have_count(3)  # a new search is drawn at once
    go(page, "activity")
    shot(page, "trends")


CAPTURE_TIME = "2026-03-02T10:00:00+00:00"
CAPTURE_EVENTS = [
    {"role": "user", "text": "Can you run the tests again?", "time": CAPTURE_TIME, "session": "s1"},
    {
        "role": "assistant",
        "text": "The root cause was a stale .pyc file from the old package layout.",
        "time": CAPTURE_TIME,
        "session": "s1",
    },
    {
        "role": "assistant",
        "text": "We decided to use SQLite in WAL mode because it handles concurrent readers well.",
        "time": CAPTURE_TIME,
        "session": "s1",
    },
    {"role": "user", "text": "Thanks!", "time": CAPTURE_TIME, "session": "s1"},
]


def _candidates(server, project: str, status: str) -> list[dict]:
    return server.ok("GET", f"/v1/memories/candidates?project={quote(project)}&status={status}")["candidates"]


def test_candidates_listed_approved_edited_rejected_and_a_409_when_decided_elsewhere(page, server):
    project = "/srv/console-candidates"
    proposed = server.ok("POST", "/v1/memories/capture", {"project": project, "events": CAPTURE_EVENTS})["candidates"]
    assert len(proposed) == 2
    connect(page, server.token)
    open_project(page, project)
    go(page, "capture")
    listed = server.ok("GET", f"/v1/memories/candidates?project={quote(project)}&status=pending")
    expect(page.locator("#candidates-explanation")).to_have_text(listed["explanation"])
    rows = page.locator("#candidate-list li.cand")
    expect(rows).to_have_count(2)
    for c in listed["candidates"]:
        row = page.locator(f"#candidate-list li[data-id='{c['id']}']")
        expect(row.locator(".cand-text")).to_have_text(c["text"])
        expect(row.locator(".cand-reason")).to_have_text("Why: " + c["reason"])
        expect(row.locator(".badge-score")).to_have_text(f"score {c['score']:.3f}")
        for bit in (c["type"], c["role"], "session s1"):
            expect(row.locator(".meta")).to_contain_text(bit)
        expect(row.locator(".meta .tag")).to_have_text(["#" + t for t in c["tags"]])
        expect(row.locator(".meta")).not_to_contain_text("[object")
    assert page.evaluate(UNNAMED_CONTROLS) == []
    shot(page, "candidates")

    first, second = listed["candidates"]
    row = page.locator(f"#candidate-list li[data-id='{first['id']}']")
    row.locator("[data-action='Approve']").click()
    field = page.get_by_label("Text to store (edit if you like)")
    expect(field).to_be_focused()
    expect(field).to_have_value(first["text"])
    field.fill("Edited in the console: " + first["text"])
    row.locator("[data-action='Confirm approve']").click()
    settle(page)
    expect(notice(page)).not_to_have_class(re.compile(r"\bis-idle\b"))
    approved = _candidates(server, project, "approved")
    assert [c["id"] for c in approved] == [first["id"]]
    memory = server.get(approved[0]["memory_id"])[1]["memory"]  # the candidate approved became a memory
    assert memory["content"] == "Edited in the console: " + first["text"] and memory["project"] == project
    expect(card(page, "memory-list", memory["id"])).to_contain_text("Edited in the console")
    expect(rows).to_have_count(1)
    expect(page.locator("#candidates-title")).to_be_focused()

    row = page.locator(f"#candidate-list li[data-id='{second['id']}']")
    row.locator("[data-action='Reject']").click()
    page.get_by_label("Reason for rejecting (optional)").fill("we knew that")
    row.locator("[data-action='Confirm reject']").click()
    settle(page)
    rejected = _candidates(server, project, "rejected")
    assert [(c["id"], c["note"]) for c in rejected] == [(second["id"], "we knew that")]
    expect(page.locator("#candidate-list li.cand")).to_have_count(0)

    # Another client decides a candidate this page still shows: the page's approve is a 409, said so.
    more = [
        {"role": "assistant", "text": "The fix was to pin numpy below 2.0 in pyproject.toml.", "time": CAPTURE_TIME}
    ]
    late = server.ok("POST", "/v1/memories/capture", {"project": project, "events": more})["candidates"][0]
    page.get_by_role("button", name="Refresh candidates").click()
    settle(page)
    row = page.locator(f"#candidate-list li[data-id='{late['id']}']")
    expect(row).to_have_count(1)
    server.ok("POST", f"/v1/memories/candidates/{late['id']}/reject", {"reason": "by another client"})
    page.expected_statuses.add(409)
    row.locator("[data-action='Approve']").click()
    row.locator("[data-action='Confirm approve']").click()
    settle(page)
    expect(page.locator("#alert")).to_contain_text("409")
    expect(page.locator("#alert")).to_contain_text("already decided")
    assert {c["id"] for c in _candidates(server, project, "rejected")} == {late["id"], second["id"]}
    assert _candidates(server, project, "approved") == approved  # the page's approve changed nothing
    expect(page.locator("#candidate-list li.cand")).to_have_count(0)  # the list was read again

    page.get_by_role("button", name="Approved", exact=True).click()
    settle(page)
    shown = page.locator(f"#candidate-list li[data-id='{first['id']}']")
    expect(shown).to_contain_text(memory["id"])
    expect(shown.locator("[data-action='Approve']")).to_have_count(0)
    expect(page.locator("#alert")).to_have_class(re.compile(r"\bis-idle\b"))  # a new action clears the 409


EMAIL_TEXT = "mail jane@acme.io the invoice"


def test_visibility_and_subject_shown_edited_filtered_and_public_refused_for_flagged_data(page, server):
    project = "/srv/console-visibility"
    plain = server.store(project, "the deploy runs on fridays")
    flagged = server.store(project, EMAIL_TEXT)
    connect(page, server.token)
    open_project(page, project)
    _open_detail(page, plain["id"])
    expect(detail_value(page, "visibility")).to_have_text("private")
    page.get_by_role("button", name="Edit", exact=True).click()
    expect(page.locator("#edit-visibility")).to_have_value("private")
    page.locator("#edit-visibility").select_option("shared")
    page.locator("#edit-subject").fill("jane")
    page.get_by_role("button", name="Save changes").click()
    settle(page)
    expect(notice(page)).to_contain_text("saved")
    now = server.get(plain["id"])[1]["memory"]
    assert (now["visibility"], now["subject"]) == ("shared", "jane")  # the memory's visibility changed
    expect(detail_value(page, "visibility")).to_have_text("shared")
    expect(detail_value(page, "subject")).to_have_text("jane")

    asked = []
    page.on("request", lambda r: asked.append(r.url) if "/v1/memories?" in r.url else None)
    page.locator("#list-visibility").select_option("shared")
    page.locator("#list-subject").fill("jane")
    page.get_by_role("button", name="Filter", exact=True).click()
    settle(page)
    assert "visibility=shared" in asked[-1] and "subject=jane" in asked[-1]
    rows = page.locator("#memory-list li.card-item")
    expect(rows).to_have_count(1)
    expect(card(page, "memory-list", plain["id"])).to_have_count(1)

    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/v1/memories/search") else None)
    go(page, "search")
    page.locator("#search-filters summary").click()
    page.locator("#search-visibility").select_option("shared")
    page.locator("#search-subject").fill("jane")
    page.get_by_label("Query").fill("deploy")
    page.get_by_role("button", name="Search", exact=True).click()
    settle(page)
    assert sent[-1]["filters"] == {"visibility": "shared", "subject": "jane"}
    answer = server.ok("POST", "/v1/memories/search", sent[-1])
    assert [h["id"] for h in answer["results"]] == [plain["id"]]
    expect(page.locator("#hit-list li.card-item")).to_have_count(1)

    # Flagged personal data cannot be made public: the 409 names the flags, and nothing changed.
    go(page, "projects")
    page.locator("#list-visibility").select_option("")
    page.locator("#list-subject").fill("")
    page.get_by_role("button", name="Filter", exact=True).click()
    settle(page)
    _open_detail(page, flagged["id"])
    page.expected_statuses.add(409)
    page.get_by_role("button", name="Edit", exact=True).click()
    page.locator("#edit-visibility").select_option("public")
    page.get_by_role("button", name="Save changes").click()
    settle(page)
    expect(page.locator("#alert")).to_contain_text("409")
    expect(page.locator("#alert")).to_contain_text("email")
    expect(page.locator("#edit-visibility")).to_be_focused()
    assert server.get(flagged["id"])[1]["memory"]["visibility"] == "private"
    assert page.evaluate(UNNAMED_CONTROLS) == []
    shot(page, "visibility")

    # Stored from the page with a visibility and a subject: the API keeps both, the card shows them.
    stores = []
    page.on("request", lambda r: stores.append(r.post_data_json) if r.url.endswith("/v1/memories") else None)
    page.locator("#store-content").fill("the on-call rota is in the wiki")
    page.locator("#store-visibility").select_option("public")
    page.locator("#store-subject").fill("ops-team")
    page.get_by_role("button", name="Store", exact=True).click()
    settle(page)
    assert (stores[-1]["visibility"], stores[-1]["subject"]) == ("public", "ops-team")
    listed = server.ok("GET", f"/v1/memories?project={quote(project)}&visibility=public")["memories"]
    assert [(m["content"], m["subject"]) for m in listed] == [("the on-call rota is in the wiki", "ops-team")]
    shown = card(page, "memory-list", listed[0]["id"])
    expect(shown.locator(".badge-visibility")).to_have_text("public")
    expect(shown.locator(".badge-subject")).to_have_text("about ops-team")
    expect(page.locator("#store-visibility")).to_have_value("private")  # the form is reset for the next store


def test_candidates_are_paged_with_the_apis_cursor(page, server):
    project = "/srv/console-candidates-paging"
    events = [
        {
            "role": "assistant",
            "time": CAPTURE_TIME,
            "text": f"We decided to use engine{n} for queue{n} because it handles burst{n} traffic well.",
        }
        for n in range(25)
    ]
    proposed = server.ok("POST", "/v1/memories/capture", {"project": project, "events": events})["candidates"]
    assert len(proposed) > 20  # more than the console's page of 20
    connect(page, server.token)
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "/v1/memories/candidates?" in r.url else None)
    open_project(page, project)
    go(page, "capture")
    rows = page.locator("#candidate-list li.cand")
    expect(rows).to_have_count(20)
    first = server.ok("GET", f"/v1/memories/candidates?project={quote(project)}&limit=20")
    assert first["next_cursor"]
    page.get_by_role("button", name="More candidates").click()
    settle(page)
    assert parse_qs(urlsplit(asked[-1]).query)["cursor"] == [first["next_cursor"]]  # the API's cursor, as given
    expect(rows).to_have_count(len(proposed))
    shown = rows.evaluate_all("rs => rs.map(r => r.dataset.id)")
    assert sorted(shown) == sorted(c["id"] for c in proposed) and len(set(shown)) == len(shown)
    expect(page.get_by_role("button", name="More candidates")).to_be_hidden()


def test_the_capture_threshold_is_set_for_the_open_project(page, server):
    project = "/srv/console-threshold"
    connect(page, server.token)
    open_project(page, project)
    go(page, "capture")
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/capture/settings") else None)
    field = page.get_by_label("Auto-approve threshold (0 to 1)")
    for bad in ("1.5", "-0.1", ""):
        field.fill(bad)
        page.get_by_role("button", name="Set threshold").click()
        expect(page.locator("#alert")).to_contain_text("Threshold failed")
        expect(field).to_be_focused()
    assert sent == []  # refused on the page, nothing sent
    field.fill("0.8")
    page.get_by_role("button", name="Set threshold").click()
    settle(page)
    assert sent == [{"project": project, "threshold": 0.8}]
    expect(page.locator("#alert")).to_have_class(re.compile(r"\bis-idle\b"))
    captured = server.ok(
        "POST", "/v1/memories/capture", {"project": project, "events": CAPTURE_EVENTS, "auto_approve": True}
    )
    assert captured["threshold"] == 0.8  # the API now uses it
    assert set(captured["approved"]) == {c["id"] for c in captured["candidates"] if c["score"] >= 0.8}


def test_project_settings_set_the_secrets_and_personal_data_policies(page, server):
    """The settings view shows the project's policies in force and sends only what changed; a
    secret stored afterwards meets the new policy."""
    project = "/srv/console-policies"
    server.store(project, "a memory so the project exists")
    connect(page, server.token)
    open_project(page, project)
    go(page, "settings")
    secrets, pii = page.get_by_label("Secrets found in a stored text"), page.get_by_label("Personal data found")
    expect(secrets).to_have_value("redact")
    expect(pii).to_have_value("flag")

    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/projects/settings") else None)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#notice")).to_contain_text("Nothing changed")
    assert sent == []

    secrets.select_option("refuse")
    pii.select_option("redact")
    page.get_by_role("button", name="Save", exact=True).click()
    settle(page)
    expect(page.locator("#alert")).to_have_class(re.compile(r"\bis-idle\b"))
    assert sent == [{"project": project, "secrets_policy": "refuse", "pii_policy": "redact"}]
    info = next(p for p in server.ok("GET", "/v1/projects")["projects"] if p["project"] == project)
    assert (info["secrets_policy"], info["pii_policy"]) == ("refuse", "redact")
    status, body = server.call(
        "POST",
        "/v1/memories",
        {"project": project, "content": "DATABASE_URL=postgresql://app:Xk9vQ2mLp7RtZw4s@db.internal:5432/prod"},
    )
    assert status == 422, body
    page.reload()
    go(page, "settings")
    expect(page.get_by_label("Secrets found in a stored text")).to_have_value("refuse")
