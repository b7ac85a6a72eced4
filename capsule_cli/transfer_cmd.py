"""``capsule export`` and ``capsule import``: the local store's data as JSON Lines, in and out,
and imports from the original projects' databases.

``capsule import FILE|-`` reads an export; ``capsule import vector-bridge postgresql://...``
reads a Vector Bridge database; ``capsule import capsule-mongo URI --project P`` reads the
first Capsule's ``memories`` collection. Each prints what it imported, skipped as already
present and refused (by line or row, and field), and exits 1 when it refused anything or
the input was cut short.

Beside a running ``capsule serve`` of the same data folder, ``capsule export`` streams its
``GET /v1/export`` pages (no library loaded); the rows are the same, a memory's votes following
its page of memories. ``capsule import FILE|-`` of at most the API's body limit
(:data:`BODY_LIMIT`) posts the file as it is to ``POST /v1/import`` with ``source`` its name, so
the answer names the file as an embedded run does; a larger file, a name the route's ``source``
refuses and a file that is not UTF-8 (refused whole by the HTTP edge, line by line here) are
imported here, the library loaded for it, as are the Vector Bridge and first-Capsule imports.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # capsule.transfer (the library) loads where the data is read or written, not for --help
    from capsule.transfer import DataImportResult

from capsule.core.embedder_names import EMBEDDER_NAMES
from capsule.core.errors import CapsuleError, InvalidInput

from . import cli, render
from .progress import Progress

FOREIGN = ("vector-bridge", "capsule-mongo")
# GET /v1/export's media type and next-page header (functions.handlers.export), written out so
# an export a running server answers loads no library; tests/cli/test_cli_start.py checks them.
EXPORT_MEDIA_TYPE = "application/x-ndjson"
EXPORT_NEXT_CURSOR = "X-Capsule-Next-Cursor"
# POST /v1/import's body limit and ``source`` parameter (capsule.core.limits, functions.handlers.import_data)
BODY_LIMIT = 1024 * 1024 + 64 * 1024
SOURCE_CHARS = 255


@contextmanager
def _output(target: str | None) -> Iterator[IO[str]]:
    if target in (None, "-"):
        yield sys.stdout
        return
    path = Path(target)  # type: ignore[arg-type]
    try:
        with path.open("w", encoding="utf-8") as out:
            yield out
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror}", field="output") from exc


def _memory_count(projects, project: str | None) -> int:
    """The memory rows an export will write (forgotten ones too): the progress bar's total."""
    return sum(p.memories + p.forgotten for p in projects.projects if project is None or p.project == project)


def _page_lines(pages: Iterator[bytes]) -> Iterator[str]:
    """The lines of a served export's pages, each ending with its newline (a page holds whole
    lines; split at newlines only, as a row's text may hold other line separators)."""
    for page in pages:
        *lines, rest = page.decode("utf-8").split("\n")
        yield from (line + "\n" for line in lines)
        if rest:
            yield rest


def _export(args: argparse.Namespace) -> tuple[Iterator[str], int | None]:
    """The export's lines and its memory count: from the running server (its /v1/export pages,
    streamed), else from the store opened here."""
    pages = cli.served_pages(
        args, "export", {"project": args.project}, next_header=EXPORT_NEXT_CURSOR, accept=EXPORT_MEDIA_TYPE
    )
    if pages is not None:
        projects = cli.served(args, "projects")  # None if it stopped since: a bar without a total
        return _page_lines(pages), None if projects is None else _memory_count(projects, args.project)
    from capsule.transfer import export_lines, open_sources

    service = cli.service_from(args)
    count = _memory_count(service.projects(cli.LOCAL_TENANT), args.project)
    return export_lines(open_sources(service), cli.LOCAL_TENANT, args.project), count


def cmd_export(args: argparse.Namespace) -> None:
    lines, count = _export(args)
    rows = 0
    with _output(args.output) as out, Progress("export (memories)", count) as bar:
        for line in lines:
            out.write(line)
            rows += 1
            if line.startswith('{"kind":"memory"'):
                bar.advance()
    if args.output not in (None, "-"):
        print(f"exported {rows - 2} row(s) to {args.output}", file=sys.stderr)


@contextmanager
def _input(source: str) -> Iterator[IO[bytes]]:
    if source == "-":
        yield sys.stdin.buffer
        return
    try:
        with open(source, "rb") as handle:
            yield handle
    except OSError as exc:
        raise InvalidInput(f"cannot read {source}: {exc.strerror}", field="file") from exc


def _foreign(args: argparse.Namespace, service) -> DataImportResult:
    if not args.uri:
        raise InvalidInput(f"capsule import {args.source} needs the database URI", field="uri")
    from capsule.transfer import open_sources

    sources = open_sources(service)
    if args.source == "vector-bridge":
        from capsule.transfer.vector_bridge import import_vector_bridge

        return import_vector_bridge(
            sources, cli.LOCAL_TENANT, args.uri, embedder=service.embedder, learning=_learning(service)
        )
    from capsule.transfer.capsule_mongo import import_capsule_mongo

    if not args.project:
        raise InvalidInput("capsule import capsule-mongo needs --project (the memories' project here)", field="project")
    return import_capsule_mongo(
        sources,
        cli.LOCAL_TENANT,
        args.uri,
        project=args.project,
        embedder=service.embedder,
        database=args.database,
        collection=args.collection,
        source_model=args.source_model,
    )


def _size(handle: IO[bytes]) -> int | None:
    """The file's size, for the progress bar (None for a pipe)."""
    try:
        size = os.fstat(handle.fileno()).st_size
    except (OSError, ValueError, AttributeError):
        return None
    return size or None


def _counted(lines: Iterator[bytes], bar: Progress) -> Iterator[bytes]:
    for line in lines:
        bar.advance(len(line))
        yield line


def _learning(service):
    from capsule.runtime.learning import build_learning

    return build_learning(service)


class _Rejoined:
    """A binary stream whose first bytes were read already (``head``), then the rest of ``tail``:
    standard input read up to the body limit, found longer, and imported here after all."""

    def __init__(self, head: bytes, tail: IO[bytes]) -> None:
        self.head, self.tail = io.BytesIO(head), tail

    def readline(self, size: int = -1) -> bytes:
        line = self.head.readline(size)
        if line.endswith(b"\n") or 0 <= size <= len(line):
            return line
        return line + self.tail.readline(-1 if size < 0 else size - len(line))


def _served_import(args: argparse.Namespace, handle: IO[bytes], name: str) -> tuple[Any, IO[bytes] | _Rejoined]:
    """The running server's answer to the whole input posted as it is (None: import it here),
    and the stream to import here from (what was read to try is not lost)."""
    if not (name.isprintable() and len(name) <= SOURCE_CHARS) or cli._server(args) is None:
        return None, handle
    data = handle.read(BODY_LIMIT + 1)
    rest = _Rejoined(data, handle)
    if len(data) > BODY_LIMIT:
        return None, rest
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None, rest
    result = cli.served(args, "import_data", raw=data, content_type=EXPORT_MEDIA_TYPE, query={"source": name})
    return result, rest


def cmd_import(args: argparse.Namespace) -> None:
    result: Any
    if args.source in FOREIGN:
        result = _foreign(args, cli.service_from(args))
    else:
        if args.uri:
            raise InvalidInput(f"unexpected argument {args.uri!r}: an export file takes none", field="uri")
        name = "standard input" if args.source == "-" else args.source
        with _input(args.source) as handle:
            result, rest = _served_import(args, handle, name)
            if result is None:
                result = _import_here(args, rest, name, _size(handle))
    print(render.as_json(result) if args.json else _report(result, "row" if args.source in FOREIGN else "line"))
    if result.refused_total or not result.complete:
        raise CapsuleError(f"{result.refused_total} row(s) refused" + ("" if result.complete else "; input cut short"))


def _import_here(
    args: argparse.Namespace, handle: IO[bytes] | _Rejoined, name: str, size: int | None
) -> DataImportResult:
    from capsule.transfer import import_lines, open_sources
    from capsule.transfer.format import read_lines

    sources = open_sources(cli.service_from(args))
    with Progress("import (bytes)", size) as bar:
        return import_lines(sources, cli.LOCAL_TENANT, _counted(read_lines(handle), bar), source=name)


def _report(result: DataImportResult, unit: str) -> str:
    lines = [result.explanation]
    lines += [f"  {unit} {r.line}: {r.field}: {r.message}" for r in result.refused]
    lines += [f"  not placed: {u.column}: {u.reason}" for u in result.not_placed]
    return "\n".join(lines)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write the local store's data as JSON Lines (lossless)")
    p.add_argument("--project", "-p", help="one project only (default: every project)")
    p.add_argument("--output", "-o", help="the file to write (default, or -: standard output)")
    p.add_argument("--data-dir", help="data folder (default ~/.capsule, or CAPSULE_DATA_DIR)")
    p.add_argument("--embedder", choices=EMBEDDER_NAMES)
    p.set_defaults(run=cmd_export)

    p = sub.add_parser(
        "import",
        help="import an export file (or -), or: vector-bridge URI, capsule-mongo URI",
        description="capsule import FILE|-  |  vector-bridge postgresql://...  |  "
        "capsule-mongo mongodb://... --project P. Idempotent: a re-run imports "
        "nothing twice. Beside a running capsule serve of this data folder, an export file of "
        f"at most {BODY_LIMIT:,} bytes (the API's body limit) is imported by it (POST /v1/import); "
        "a larger one is imported here, loading the library.",
    )
    p.add_argument("source", metavar="FILE|-|vector-bridge|capsule-mongo")
    p.add_argument("uri", nargs="?", help="the database to read (vector-bridge, capsule-mongo)")
    p.add_argument("--project", "-p", help="capsule-mongo: the project its memories go into")
    p.add_argument("--database", help="capsule-mongo: the database (default: the URI's, else 'capsule')")
    p.add_argument("--collection", default="memories", help="capsule-mongo: the collection (default memories)")
    p.add_argument(
        "--source-model",
        default="voyage-3.5",
        help="capsule-mongo: the model that made its vectors (default voyage-3.5; name another, e.g. "
        "'fallback', for a database filled without a Voyage key, and every memory is re-embedded)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--data-dir", help="data folder (default ~/.capsule, or CAPSULE_DATA_DIR)")
    p.add_argument("--embedder", choices=EMBEDDER_NAMES)
    p.set_defaults(run=cmd_import)
