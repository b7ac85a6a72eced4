"""Every page the hosted API answers fits a Lambda response (6 MB) as Lambda sends it: the
answer's body escaped again inside Lambda's JSON, so quotes and backslashes double.

Worst cases, each a project of memories at the 64 KiB limit: JSON log lines (quote-heavy),
Windows paths (backslash-heavy), prose, tab-separated text and non-ASCII text. One memory
of each is stored through the service (guard, embedding); the rest are copies written
straight to the store, so a test holds ~25 MB of memories in a few seconds."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest

from capsule.config import Settings
from capsule.core import limits, wire
from capsule.runtime.service import build_service
from capsule.store.sides import transfer_store
from capsule.transfer.export import export_lines
from functions import app, transfer_app
from functions.handlers import export as export_handler
from functions.handlers import list as list_handler
from functions.handlers import sync_changes as sync_handler
from tests.api.events import event

TENANT = "arn:aws:iam::123456789012:user/alice"
LAMBDA_LIMIT = 6_000_000  # 6 MB in decimal: under Lambda's 6,291,556 bytes with room to spare
COPIES = 100  # a list page's most (limits.MAX_PAGE), and twice what fits of the worst kind

LINES = {
    "json": '{"level":"error","msg":"a \\"quoted\\" value","at":"2026-12-03T10:00:00Z","n":[1,2,3]}\n',
    "windows": 'C:\\Users\\dev\\source\\repos\\capsule\\layers\\capsule\\store\\sqlite.py:120 "E501"\n',
    "prose": "The deploy failed because the layer was built for x86_64 while the function runs on arm64. ",
    "tabs": 'id\tname\tpath\tstatus\t"quoted"\t\\n\n',
    "unicode": "日本語のテキスト、エラーメッセージ «ошибка» 🚀 ",
}


def _content(kind: str, n: int) -> str:
    text, line = f"{kind} {n}: ", LINES[kind]
    while len((text + line).encode()) <= limits.MAX_CONTENT_BYTES:
        text += line
    return text


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = build_service(Settings(data_dir=tmp_path_factory.mktemp("limits"), embedder="hashing"))
    store = transfer_store(svc.store)
    for kind in LINES:
        first = svc.store_memory(TENANT, {"project": kind, "content": _content(kind, 0)}).memory
        record = svc.store.get(TENANT, first.id)
        copies = []
        for n in range(1, COPIES):
            content = _content(kind, n)
            copies.append(
                replace(
                    record, id=f"{kind}-{n:04d}", content=content, sha256=hashlib.sha256(content.encode()).hexdigest()
                )
            )
        store.put_memories(TENANT, kind, copies)
    app.set_service(svc)
    yield svc
    app.set_service(None)
    svc.store.close()


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # no metric lines in the output


def _call(handler, route: str, **query) -> dict:
    return handler.handler(event(route, tenant=TENANT, query=query), app.LocalContext(function_name=route))


def _wrapped(response: dict) -> int:
    """The bytes Lambda sends: the whole response as JSON (ASCII-escaped, the larger encoding)."""
    return len(json.dumps(response))


def test_the_content_is_at_the_limit_and_escapes_heavily():
    for kind in LINES:
        content = _content(kind, 99)
        assert limits.MAX_CONTENT_BYTES - 200 < len(content.encode()) <= limits.MAX_CONTENT_BYTES
    assert wire.wrapped_bytes(json.dumps(_content("json", 1))) > 1.6 * limits.MAX_CONTENT_BYTES


def test_every_export_page_fits_and_the_pages_join_into_the_file(service):
    whole = "".join(export_lines(transfer_app.sources(), TENANT))
    assert wire.wrapped_bytes(whole) > 4 * LAMBDA_LIMIT  # the export is far larger than one answer
    parts, cursor, largest = [], None, 0
    while True:
        response = _call(export_handler, "export", **({"cursor": cursor} if cursor else {}))
        assert response["statusCode"] == 200, response["body"][:300]
        largest = max(largest, _wrapped(response))
        assert _wrapped(response) < LAMBDA_LIMIT
        parts.append(response["body"])
        cursor = response["headers"].get(export_handler.NEXT_CURSOR)
        if cursor is None:
            break
    assert len(parts) >= 5
    # The largest answer is near the budget: pages are full, not cut short.
    assert largest > wire.PAGE_BUDGET * 0.5
    print(f"export: {len(parts)} pages, largest wrapped response {largest} bytes")

    def not_header(text: str) -> list[str]:
        return [line for line in text.splitlines() if '"kind":"header"' not in line]

    assert not_header("".join(parts)) == not_header(whole)


@pytest.mark.parametrize("kind", sorted(LINES))
def test_every_sync_page_fits(service, kind):
    after, seen, largest = None, 0, 0
    while True:
        response = _call(sync_handler, "sync_changes", project=kind, limit=200, **({"after": after} if after else {}))
        assert response["statusCode"] == 200, response["body"][:300]
        largest = max(largest, _wrapped(response))
        assert _wrapped(response) < LAMBDA_LIMIT
        page = json.loads(response["body"])
        seen += len(page["items"])
        if not page["more"]:
            break
        after = ".".join(map(str, page["positions"][-1]))
    assert seen == COPIES
    print(f"sync {kind}: largest wrapped response {largest} bytes")


@pytest.mark.parametrize("kind", sorted(LINES))
def test_every_list_page_fits(service, kind):
    cursor, ids, largest = None, [], 0
    while True:
        response = _call(
            list_handler, "list", project=kind, limit=limits.MAX_PAGE, **({"cursor": cursor} if cursor else {})
        )
        assert response["statusCode"] == 200, response["body"][:300]
        largest = max(largest, _wrapped(response))
        assert _wrapped(response) < LAMBDA_LIMIT
        page = json.loads(response["body"])
        ids += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(ids) == len(set(ids)) == COPIES
    print(f"list {kind}: largest wrapped response {largest} bytes")


def test_wrapped_bytes_is_what_json_makes_of_the_text():
    for text in ['{"a":"b\\"c"}\n', "C:\\Users\\x", "tab\there", "é日🚀", ""]:
        assert wire.wrapped_bytes(text) == len(json.dumps(text))
        document = json.dumps({"v": text})
        assert wire.wrapped_json_bytes(document) == len(json.dumps(document))
    assert wire.fitting([10, 10, 10], budget=25) == 2
    assert wire.fitting([30, 1], budget=25) == 1  # one item too large still makes a page
