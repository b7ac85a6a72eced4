"""The web console at /ui, driven in Debian's headless Chromium against a real ``capsule serve``.

One server (a subprocess on a free loopback port, hashing embedder, temp data folder) and one
browser serve the whole module; each test gets a fresh browser context, so a fresh session
storage, and its own project. What the page shows is checked against what the API says.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import CLI, REPO, cli_env

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOT = REPO / "test-artifacts" / "console.png"
WAIT_MS = 15_000  # generous: the machine is shared; nothing here asserts speed


def _unavailable(reason: str) -> None:
    """Skip on a developer machine without the browser; in CI a missing browser is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the console test, not skip it", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


if not CHROMIUM.exists():
    _unavailable(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does this)")
try:
    from playwright.sync_api import Browser, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    _unavailable("the playwright package is missing (pip install -e '.[dev]')")
else:
    expect.set_options(timeout=WAIT_MS)


# ---- the server --------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Api:
    """A tiny client of the running server, to check what the page did."""

    def __init__(self, base: str, token: str, data_dir: Path | None = None) -> None:
        self.base, self.token, self.data_dir = base, token, data_dir

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.loads(exc.read())

    def ok(self, method: str, path: str, body: dict | None = None) -> dict:
        status, data = self.call(method, path, body)
        assert 200 <= status < 300, data
        return data

    def store(self, project: str, content: str, **extra) -> dict:
        return self.ok("POST", "/v1/memories", {"project": project, "content": content, **extra})["memory"]

    def get(self, memory_id: str) -> tuple[int, dict]:
        return self.call("GET", f"/v1/memories/{quote(memory_id)}")


def _wait_until_up(proc: subprocess.Popen, base: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"capsule serve exited with {proc.returncode}: {log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(base + "/ui", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise RuntimeError("capsule serve did not answer within 60 s")


def _read_token(data_dir: Path) -> str:
    # Made on the first run, mode 0600 (functions.credentials).
    return (data_dir / "gateway-token").read_text().strip()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("console-data")
    # The server logs a line per request on stderr: to a file, not a pipe nobody reads while the
    # tests run (a full pipe would block the server; the console's modules are a request each).
    log = data_dir.parent / (data_dir.name + "-serve.log")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [
                *CLI,
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--data-dir",
                str(data_dir),
                "--embedder",
                "hashing",
                "--workers",
                "2",
            ],
            cwd=REPO,
            env=cli_env(data_dir),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        _wait_until_up(proc, base, log)
        yield Api(base, _read_token(data_dir), data_dir)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- the browser ---------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        # Debian's own Chromium: never a browser downloaded by playwright.
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, server: Api):
    context = browser.new_context(viewport={"width": 1360, "height": 1000})
    context.set_default_timeout(WAIT_MS)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    # A Content-Security-Policy refusal is reported on the console; the page must cause none.
    opened.on("console", lambda msg: errors.append(msg.text) if "Content Security Policy" in msg.text else None)
    opened.goto(server.base + "/ui")
    yield opened
    context.close()
    assert errors == [], f"the page threw: {errors}"


def settle(page: Page) -> None:
    """Wait until the page has no request in flight (it counts them on body[data-pending])."""
    expect(page.locator("body")).to_have_attribute("data-pending", "0")


def connect(page: Page, token: str) -> None:
    page.get_by_label("API token").fill(token)
    page.get_by_label("API token").press("Enter")
    expect(page.locator("#workspace")).to_be_visible()
    settle(page)


def open_project(page: Page, project: str) -> None:
    page.get_by_label("Open or start a project").fill(project)
    page.get_by_role("button", name="Open", exact=True).click()
    expect(page.locator("#project-name")).to_have_text(project)
    settle(page)


def go(page: Page, view: str) -> None:
    """Open a view from the side navigation, as a user would."""
    page.locator(f".nav-link[data-nav='{view}']").click()
    expect(page.locator(f"#view-{view}")).to_be_visible()
    settle(page)


def store_in_page(page: Page, content: str, tags: str = "", pinned: bool = False) -> None:
    page.get_by_label("Content").fill(content)
    page.get_by_label("Tags", exact=True).fill(tags)
    page.get_by_label("Pinned").set_checked(pinned)
    page.get_by_role("button", name="Store", exact=True).click()
    # The click starts the request at once; after it, the form is empty and the list read again.
    settle(page)
    expect(page.locator("#notice")).to_contain_text("Stored")
    expect(page.get_by_label("Content")).to_have_value("")


def card(page: Page, where: str, memory_id: str):
    return page.locator(f"#{where} li.card-item[data-id='{memory_id}']")


def notice(page: Page):
    return page.locator("#notice")


# ---- tests ------------------------------------------------------------------------


def test_a_wrong_token_is_refused_and_the_right_one_kept_for_the_tab(page, server):
    expect(page.locator("#workspace")).to_be_hidden()
    page.get_by_label("API token").fill("not-the-token")
    page.get_by_role("button", name="Connect").click()
    expect(page.locator("#connect-error")).to_contain_text("refused")
    expect(page.locator("#workspace")).to_be_hidden()
    assert page.evaluate("sessionStorage.length") == 0

    connect(page, server.token)
    assert page.evaluate("sessionStorage.getItem('capsule.console.token')") == server.token
    assert page.evaluate("localStorage.length") == 0
    page.reload()  # the tab keeps its session: no second prompt
    expect(page.locator("#workspace")).to_be_visible()
    settle(page)

    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#connect")).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0
    expect(page.locator("#activity li")).to_have_count(0)


def test_store_list_search_pin_feedback_forget_restore(page, server):
    project = "/srv/console-flow"
    connect(page, server.token)
    open_project(page, project)
    expect(page.locator("#memory-empty")).to_be_visible()

    store_in_page(
        page,
        "Use BEGIN IMMEDIATE for SQLite writes: it avoids deadlocks between writers.",
        tags="sqlite, deadlock",
        pinned=True,
    )
    store_in_page(page, "The Lambda layer zip went over 250 MB; strip tests and caches before zipping.", tags="deploy")
    hostile = '<img src=x onerror="window.pwned=1"> <b>not bold</b> & friends'
    store_in_page(page, hostile, tags="xss")

    listed = server.ok("GET", f"/v1/memories?project={quote(project)}")["memories"]
    assert [m["content"] for m in listed][0] == hostile and len(listed) == 3
    ids = {m["content"].split()[0]: m["id"] for m in listed}
    sqlite_id, lambda_id, hostile_id = ids["Use"], ids["The"], ids["<img"]

    # The list shows all three, newest first, with the API's explanation; the tags and the pin.
    rows = page.locator("#memory-list li.card-item")
    expect(rows).to_have_count(3)
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.id)") == [m["id"] for m in listed]
    expect(page.locator("#list-explanation")).to_have_text(
        server.ok("GET", f"/v1/memories?project={quote(project)}")["explanation"]
    )
    expect(card(page, "memory-list", sqlite_id).locator(".badge-pin")).to_have_text("Pinned")
    expect(card(page, "memory-list", sqlite_id)).to_contain_text("#deadlock")
    # Memory text is text, never markup.
    hostile_card = card(page, "memory-list", hostile_id)
    expect(hostile_card.locator(".content")).to_have_text(hostile)
    assert hostile_card.locator("img, b").count() == 0
    assert page.evaluate("window.pwned") is None

    # The pinned view holds only the pinned memory.
    page.get_by_role("button", name="Pinned", exact=True).click()
    expect(rows).to_have_count(1)
    expect(card(page, "memory-list", sqlite_id)).to_be_visible()
    page.get_by_role("button", name="Recent", exact=True).click()
    expect(rows).to_have_count(3)

    # Search shows each hit's score and every component, as the API computed them.
    query = "sqlite deadlock writers"
    go(page, "search")
    page.get_by_label("Query").fill(query)
    page.get_by_label("Query").press("Enter")
    hits = page.locator("#hit-list li.card-item")
    expected = server.ok("POST", "/v1/memories/search", {"query": query, "project": project})
    expect(hits).to_have_count(len(expected["results"]))
    expect(page.locator("#search-explanation")).to_have_text(expected["explanation"])
    assert expected["results"][0]["id"] == sqlite_id
    for hit in expected["results"]:
        shown = card(page, "hit-list", hit["id"])
        expect(shown.locator(".score-value")).to_have_text(f"{hit['score']:.3f}")
        for name in ("vector", "bm25", "time", "feedback", "outcome"):
            component = shown.locator(f"[data-component='{name}']")
            expect(component.locator("dt")).to_have_text(name)
            expect(component.locator(".comp-value")).to_have_text(f"{hit['components'][name]:.3f}")

    # Unpin and pin again, from the list; the API agrees each time.
    go(page, "projects")
    top = card(page, "memory-list", sqlite_id)
    top.get_by_role("button", name="Unpin", exact=False).click()
    expect(notice(page)).to_contain_text("Unpinned")
    expect(top.locator(".badge-pin")).to_have_count(0)
    assert server.get(sqlite_id)[1]["memory"]["pinned"] is False
    lambda_card = card(page, "memory-list", lambda_id)
    lambda_card.locator("[data-action='Pin']").click()
    expect(notice(page)).to_contain_text("Pinned:")
    expect(lambda_card.locator(".badge-pin")).to_have_text("Pinned")
    assert server.get(lambda_id)[1]["memory"]["pinned"] is True

    # Feedback from a search hit and from the list.
    go(page, "search")
    card(page, "hit-list", sqlite_id).locator("[data-action='Helpful']").click()
    expect(notice(page)).to_contain_text("Recorded 'helpful'")
    go(page, "projects")
    expect(card(page, "memory-list", sqlite_id).locator(".votes")).to_contain_text("▲ 1")
    card(page, "memory-list", hostile_id).locator("[data-action='Not helpful']").click()
    expect(notice(page)).to_contain_text("Recorded 'not helpful'")
    assert server.get(sqlite_id)[1]["memory"]["helpful"] == 1
    assert server.get(hostile_id)[1]["memory"]["unhelpful"] == 1

    # Forget: gone from the page and the API, listed under recently forgotten; then restore it.
    card(page, "memory-list", lambda_id).locator("[data-action='Forget']").click()
    card(page, "memory-list", lambda_id).locator("[data-action='Confirm forget']").click()
    expect(notice(page)).to_contain_text(f"Forgot {lambda_id}")
    expect(card(page, "memory-list", lambda_id)).to_have_count(0)
    expect(rows).to_have_count(2)
    assert server.get(lambda_id)[0] == 404
    forgotten = page.locator(f"#forgotten-list li[data-id='{lambda_id}']")
    expect(forgotten).to_contain_text("Lambda layer zip")
    page.reload()  # the forgotten ids outlive a reload of the tab
    expect(forgotten).to_be_visible()
    forgotten.get_by_role("button").click()
    expect(notice(page)).to_contain_text(f"Restored {lambda_id}")
    expect(forgotten).to_have_count(0)
    expect(card(page, "memory-list", lambda_id)).to_be_visible()
    assert server.get(lambda_id)[0] == 200

    # Every operation above left its explanation in the activity log.
    go(page, "activity")
    for word in ("Store", "Search", "Unpin", "Pin", "Helpful", "Not helpful", "Forget", "Restore"):
        expect(page.locator("#activity .act-op", has_text=word).first).to_be_visible()

    # The picture of the console for people to look at.
    go(page, "search")
    page.get_by_label("Query").fill(query)
    page.get_by_label("Query").press("Enter")
    settle(page)
    expect(hits.first).to_be_visible()
    SCREENSHOT.parent.mkdir(exist_ok=True)
    SCREENSHOT.unlink(missing_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 10_000


def test_api_errors_are_shown_with_their_code_and_field(page, server):
    project = "/srv/console-errors"
    server.store(project, "one memory so the project exists")
    connect(page, server.token)
    open_project(page, project)

    # A search the API would refuse is refused on the page, naming the input; nothing is sent.
    searched = []
    page.on("request", lambda r: searched.append(r.url) if r.url.endswith("/search") else None)
    go(page, "search")
    page.get_by_label("Query").fill("anything")
    page.get_by_label("With tags").fill("t" * 65)  # a tag is at most 64 characters
    page.get_by_role("button", name="Search", exact=True).click()
    alert = page.get_by_role("alert").filter(has_text="Search failed")
    expect(alert).to_contain_text("over 64 characters")
    expect(page.get_by_label("With tags")).to_be_focused()
    expect(page.locator("#search-results")).to_be_hidden()
    assert searched == []

    # What only the API knows (64 KiB of UTF-8, not 64 Ki characters) shows its code and the field it named.
    go(page, "projects")
    page.get_by_label("Content").fill("é" * 40_000)
    page.get_by_role("button", name="Store", exact=True).click()
    alert = page.get_by_role("alert").filter(has_text="Store failed")
    expect(alert).to_contain_text("422")
    expect(alert).to_contain_text("content")
    page.get_by_label("Content").fill("")

    # Restoring an id that does not exist is a 404, said plainly; nothing changes.
    page.get_by_label("Restore by id").fill("no-such-memory")
    page.get_by_label("Restore by id").press("Enter")
    expect(page.get_by_role("alert").filter(has_text="Restore failed")).to_contain_text("404")
    expect(page.locator("#activity .act-error").first).to_contain_text("not_found")

    # Storing nothing is caught before any request.
    page.get_by_role("button", name="Store", exact=True).click()
    expect(page.get_by_role("alert").filter(has_text="Store failed")).to_contain_text("Write something")
    assert len(server.ok("GET", f"/v1/memories?project={quote(project)}")["memories"]) == 1


def test_projects_and_cursor_paging(page, server):
    project = "/srv/console-paging"
    stored = [server.store(project, f"paging memory number {n}") for n in range(23)]
    connect(page, server.token)

    # The project list comes from /v1/projects, with its counts; clicking one opens it.
    entry = page.locator(".project-item", has_text=project)
    expect(entry).to_contain_text("23 memories")
    entry.click()
    expect(page.locator("#project-name")).to_have_text(project)
    expect(entry).to_have_attribute("aria-current", "true")

    rows = page.locator("#memory-list li.card-item")
    expect(rows).to_have_count(20)
    more = page.get_by_role("button", name="Load more")
    more.click()
    expect(rows).to_have_count(23)
    expect(more).to_be_hidden()
    shown = rows.evaluate_all("rs => rs.map(r => r.dataset.id)")
    assert sorted(shown) == sorted(m["id"] for m in stored) and len(set(shown)) == 23


def test_keyboard_only_store_and_search(page, server):
    project = "/srv/console-keyboard"
    page.get_by_label("API token").focus()
    page.keyboard.type(server.token)
    page.keyboard.press("Enter")
    expect(page.locator("#workspace")).to_be_visible()
    page.get_by_label("Open or start a project").focus()
    page.keyboard.type(project)
    page.keyboard.press("Enter")
    expect(page.locator("#project-name")).to_have_text(project)

    page.get_by_label("Content").focus()
    page.keyboard.type("typed with the keyboard only")
    page.keyboard.press("Control+Enter")
    expect(notice(page)).to_contain_text("Stored")
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "search-query"
    page.keyboard.type("keyboard")
    page.keyboard.press("Enter")
    expect(page.locator("#hit-list li.card-item")).to_have_count(1)
    # Every action is a real button reachable with Tab.
    pin = page.locator("#hit-list [data-action='Pin']")
    pin.focus()
    page.keyboard.press("Enter")
    expect(notice(page)).to_contain_text("Pinned:")


UNNAMED_CONTROLS = """() => {
  const name = (node) => (node.getAttribute('aria-label') || '').trim()
    || [...(node.labels || [])].map((l) => l.textContent).join(' ').trim()
    || (node.tagName === 'BUTTON' ? node.textContent.trim() : '');
  return [...document.querySelectorAll('input, select, textarea, button')]
    .filter((node) => !name(node)).map((node) => node.outerHTML);
}"""


def test_every_control_has_a_name_and_memory_text_stays_text(page, server):
    project = "/srv/console-a11y"
    server.store(project, '</p><button onclick="window.pwned=1">click</button>', pinned=True)
    connect(page, server.token)
    open_project(page, project)
    go(page, "search")
    page.get_by_label("Query").fill("click")
    page.get_by_label("Query").press("Enter")
    expect(page.locator("#hit-list li.card-item")).to_have_count(1)
    assert page.evaluate(UNNAMED_CONTROLS) == []
    # The stored markup is shown as text: the page gained no button named "click".
    expect(page.get_by_role("button", name="click", exact=True)).to_have_count(0)
    assert page.locator(".content", has_text="<button onclick").count() == 2
    assert page.evaluate("window.pwned") is None


# ---- issue 19: stale messages, k, forget with undo, one vote, chunks in order ----------------


def idle(box):
    """A message box at rest: visually gone and emptied (it stays a live region for the next one)."""
    expect(box).to_have_class(re.compile(r"\bis-idle\b"))
    expect(box.locator(".notice-title")).to_have_text("")
    expect(box.locator(".notice-text")).to_have_text("")


def test_an_error_is_cleared_by_the_next_action_and_by_another_project(page, server):
    first, second = "/srv/console-stale-a", "/srv/console-stale-b"
    server.store(first, "a memory about blue-green deploys")
    server.store(second, "a memory about sqlite")
    connect(page, server.token)
    open_project(page, first)
    page.get_by_role("button", name="Store", exact=True).click()  # nothing to store: refused on the page
    alert = page.locator("#alert")
    expect(alert).to_contain_text("Store failed")
    expect(alert).not_to_have_class(re.compile(r"\bis-idle\b"))
    go(page, "search")
    page.get_by_label("Query").fill("deploys")
    page.get_by_label("Query").press("Enter")
    expect(page.locator("#hit-list li.card-item")).to_have_count(1)
    idle(alert)  # a later success does not keep the old red box

    go(page, "projects")
    page.get_by_role("button", name="Store", exact=True).click()
    expect(alert).to_contain_text("Store failed")
    page.locator(".project-item", has_text=second).click()
    expect(page.locator("#project-name")).to_have_text(second)
    idle(alert)  # nor does another project
    idle(page.locator("#notice"))
    expect(page.locator("#search-results")).to_be_hidden()  # the first project's hits are gone too
    expect(page.locator("#hit-list li.card-item")).to_have_count(0)


def test_k_is_held_to_the_apis_twenty(page, server):
    project = "/srv/console-k"
    for n in range(22):
        server.store(project, f"memory about k number {n}")
    connect(page, server.token)
    open_project(page, project)
    sent = []
    page.on("request", lambda r: sent.append(json.loads(r.post_data)) if r.url.endswith("/search") else None)
    go(page, "search")
    page.get_by_label("How many").fill("50")
    page.get_by_label("Query").fill("memory about k")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#hit-list li.card-item")).to_have_count(20)
    expect(page.get_by_label("How many")).to_have_value("20")
    idle(page.locator("#alert"))
    assert sent[-1]["k"] == 20
    assert page.get_by_label("How many").get_attribute("max") == "20"


def test_forget_asks_first_and_can_be_undone(page, server):
    project = "/srv/console-forget"
    memory = server.store(project, "forget me, then bring me back")
    connect(page, server.token)
    open_project(page, project)
    shown = card(page, "memory-list", memory["id"])
    shown.locator("[data-action='Forget']").click()
    expect(shown.locator("[data-action='Confirm forget']")).to_be_focused()
    assert server.get(memory["id"])[0] == 200  # only asked so far
    shown.locator("[data-action='Cancel']").click()
    expect(shown.locator("[data-action='Forget']")).to_be_focused()
    assert server.get(memory["id"])[0] == 200

    shown.locator("[data-action='Forget']").click()
    shown.locator("[data-action='Confirm forget']").click()
    expect(notice(page)).to_contain_text(f"Forgot {memory['id']}")
    expect(card(page, "memory-list", memory["id"])).to_have_count(0)
    assert server.get(memory["id"])[0] == 404
    page.get_by_role("button", name="Undo", exact=True).click()
    expect(notice(page)).to_contain_text(f"Restored {memory['id']}")
    expect(card(page, "memory-list", memory["id"])).to_be_visible()
    assert server.get(memory["id"])[0] == 200
    expect(page.get_by_role("button", name="Undo", exact=True)).to_be_hidden()


def test_a_vote_is_sent_once_and_shown_as_pressed(page, server):
    project = "/srv/console-votes"
    memory = server.store(project, "vote on me once")
    connect(page, server.token)
    open_project(page, project)
    helpful = card(page, "memory-list", memory["id"]).locator("[data-action='Helpful']")
    helpful.click()
    expect(notice(page)).to_contain_text("Recorded 'helpful'")
    expect(card(page, "memory-list", memory["id"]).locator("[data-action='Helpful']")).to_have_attribute(
        "aria-pressed", "true"
    )
    card(page, "memory-list", memory["id"]).locator("[data-action='Helpful']").click()
    expect(notice(page)).to_contain_text("Already marked helpful")
    card(page, "memory-list", memory["id"]).locator("[data-action='Not helpful']").click()
    expect(notice(page)).to_contain_text("cannot be taken back")
    settle(page)
    got = server.get(memory["id"])[1]["memory"]
    assert (got["helpful"], got["unhelpful"]) == (1, 0)
    page.reload()  # the tab remembers its vote
    expect(card(page, "memory-list", memory["id"]).locator("[data-action='Helpful']")).to_have_attribute(
        "aria-pressed", "true"
    )


def test_ingested_chunks_are_listed_in_order_with_their_number(page, server):
    project = "/srv/console-chunks"
    text = "\n\n".join(f"Section {n}. " + " ".join(f"word{n}x{i}" for i in range(120)) for n in range(40))
    ingested = server.ok("POST", "/v1/memories/ingest", {"project": project, "text": text, "path": "docs/guide.md"})
    assert ingested["chunks"] >= 5  # few enough for one page (20), enough that order shows
    connect(page, server.token)
    open_project(page, project)
    badges = page.locator("#memory-list .badge-chunk")
    expect(badges).to_have_count(ingested["chunks"])
    numbers = badges.evaluate_all("bs => bs.map(b => Number(b.dataset.chunk))")
    assert numbers == list(range(ingested["chunks"]))
    expect(badges.first).to_have_text(f"chunk 1 of {ingested['chunks']}")
    shown = page.locator("#memory-list li.card-item").evaluate_all("rs => rs.map(r => r.dataset.id)")
    assert shown == ingested["ids"]  # the ids in the order the text holds them
