"""Import a Vector Bridge PostgreSQL database (its README's schema) into a tenant.

- ``projects(id, root_path, label, ...)``: a project per ``root_path`` (as the Vector Bridge
  tools name it ``project_root``).
- ``documents(id, project_id, path, chunk, embedding, component, category, tags, meta,
  content_sha, updated_at)``: a memory per row, read in keyset pages by id. The embedding is
  read as text (pgvector's text form, so a plain text column stands in where the extension
  is missing); it is kept when this deployment embeds with the Vector Bridge's model
  (text-embedding-3-small, 1536-d), else the memory waits for the backfill job.
- ``memory_feedback(chunk_id, helpful, context, created_at)``: votes on those memories.
- ``solutions`` with ``signatures``, ``steps`` and ``checks``: a fixpack per solution, built
  as the fixpack file's JSON and passed through the fixpack import (:meth:`LearningService.
  import_solution`), so it is validated, embedded and deduplicated as any fixpack file is.
- ``pattern_solutions``: pattern links with their counts.

Idempotent: a memory's id is made from its project's root and its document id, and one with
the content of an active memory of the project is skipped; fixpacks dedupe on title and
category; links on their pattern and solution. A row that cannot be imported is refused
with its table, id and field, and nothing of it is written.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterator

from ..clock import Clock, system_clock
from ..embedders.base import Embedder
from ..errors import CapsuleError, InvalidInput, NotFound, Unavailable
from ..learning.records import LinkRecord, PatternRecord
from ..learning.signature import terms
from ..store.transfer import FeedbackRow
from .export import Sources
from .foreign import BadValue, Pending, clean_meta, kept_vector, new_memory, parse_vector, stable_id, write_memories
from .report import DataImportResult, Tally

MODEL = "text-embedding-3-small"  # the Vector Bridge's embedder (1536-d)
PAGE = 500
REQUIRED = {
    "projects": {"id", "root_path"},
    "documents": {"id", "project_id", "path", "chunk", "embedding", "component", "category", "tags", "meta",
                  "updated_at"},
}


def import_vector_bridge(src: Sources, tenant: str, uri: str, *, embedder: Embedder, learning: Any,
                         connect: Callable[[str], Any] | None = None, clock: Clock = system_clock,
                         page: int = PAGE) -> DataImportResult:
    """Read the database at ``uri`` (``postgresql://...``) into ``tenant``; see the module doc."""
    conn = _connect(uri, connect)
    try:
        return _Run(src, tenant, conn, embedder, learning, clock, page).run()
    finally:
        conn.close()


def _connect(uri: str, connect: Callable[[str], Any] | None) -> Any:
    if not uri.startswith(("postgresql://", "postgres://")):
        raise InvalidInput("the Vector Bridge database is a postgresql:// URI", field="uri")
    if connect is None:
        try:
            import psycopg
        except ImportError as exc:
            raise Unavailable("reading PostgreSQL needs psycopg: pip install 'capsule-memory[postgres]'") from exc
        connect = psycopg.connect
    try:
        return connect(uri)
    except Exception as exc:  # the driver's own errors: no route, refused, bad password
        raise Unavailable(f"cannot connect to the Vector Bridge database: {_first_line(exc)}") from exc


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class _Run:
    def __init__(self, src: Sources, tenant: str, conn: Any, embedder: Embedder, learning: Any, clock: Clock,
                 page: int) -> None:
        self.src, self.tenant, self.conn, self.embedder = src, tenant, conn, embedder
        self.learning, self.clock, self.page = learning, clock, page
        self.tally = Tally("the Vector Bridge database", unit="row")
        self.tally.complete = True  # a database is read whole, never cut short
        self.columns = self._columns()
        self.solution_ids: dict[Any, str] = {}  # Vector Bridge solution id -> ours

    # ---- reading ----------------------------------------------------------------

    def _query(self, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
        try:
            with self.conn.cursor() as cursor:
                cursor.execute(sql, params)
                names = [d[0] for d in cursor.description]
                return [dict(zip(names, row)) for row in cursor.fetchall()]
        except Exception as exc:
            self._rollback()
            raise Unavailable(f"the Vector Bridge database could not be read: {_first_line(exc)}") from exc

    def _rollback(self) -> None:
        try:
            self.conn.rollback()
        except Exception:  # the connection is gone: the Unavailable being raised says so
            pass

    def _columns(self) -> dict[str, set[str]]:
        rows = self._query("SELECT table_name, column_name FROM information_schema.columns "
                           "WHERE table_schema = current_schema()")
        found: dict[str, set[str]] = defaultdict(set)
        for row in rows:
            found[row["table_name"]].add(row["column_name"])
        for table, needed in REQUIRED.items():
            if table not in found:
                raise InvalidInput(f"the database has no table '{table}': not a Vector Bridge database",
                                   field=table)
            missing = sorted(needed - found[table])
            if missing:
                raise InvalidInput(f"table '{table}' lacks column(s) {', '.join(missing)} of the Vector Bridge "
                                   "schema", field=f"{table}.{missing[0]}")
        return found

    def _pages(self, table: str, columns: str, where: str = "TRUE") -> Iterator[list[dict[str, Any]]]:
        last: Any = None
        while True:
            keyed = where if last is None else f"({where}) AND id > %s"
            rows = self._query(f"SELECT {columns} FROM {table} WHERE {keyed} ORDER BY id LIMIT %s",
                               (() if last is None else (last,)) + (self.page,))
            if not rows:
                return
            yield rows
            last = rows[-1]["id"]

    # ---- the run ----------------------------------------------------------------------

    def run(self) -> DataImportResult:
        projects = {row["id"]: row for row in self._query("SELECT id, root_path FROM projects")}
        self._documents(projects)
        if {"solutions", "signatures"} <= set(self.columns):
            self._solutions()
        if "pattern_solutions" in self.columns:
            self._links()
        if not self.embedder_matches():
            self.tally.notes.append(
                f"Vectors were made by {MODEL}; this deployment embeds with {self.embedder.model_id}: the memories "
                "are found by keyword now, and the backfill job (capsule jobs run backfill) embeds them.")
        return self.tally.result()

    def embedder_matches(self) -> bool:
        return self.embedder.model_id == MODEL

    # ---- documents and their feedback -----------------------------------------------

    def _documents(self, projects: dict[Any, dict[str, Any]]) -> None:
        columns = ("id, project_id, path, chunk, embedding::text AS embedding, component, category, tags, meta, "
                   "updated_at")
        for rows in self._pages("documents", columns):
            votes = self._votes([row["id"] for row in rows])
            batches: dict[str, list[Pending]] = defaultdict(list)
            for row in rows:
                self.tally.lines += 1
                try:
                    pending = self._memory(row, projects, votes.get(row["id"], []))
                except BadValue as bad:
                    self.tally.refuse(row["id"], f"documents.{bad.field}", f"document {row['id']}: {bad.message}")
                    continue
                batches[pending.record.project].append(pending)
            for batch in batches.values():
                write_memories(self.src, self.tenant, batch, self.tally)

    def _votes(self, ids: list[Any]) -> dict[Any, list[dict[str, Any]]]:
        if "memory_feedback" not in self.columns:
            return {}
        rows = self._query("SELECT id, chunk_id, helpful, context, created_at FROM memory_feedback "
                           "WHERE chunk_id = ANY(%s) ORDER BY id", (ids,))
        found: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            found[row["chunk_id"]].append(row)
        return found

    def _memory(self, row: dict[str, Any], projects: dict[Any, dict[str, Any]], votes: list[dict[str, Any]]
                ) -> Pending:
        project = projects.get(row["project_id"])
        if project is None or not project["root_path"]:
            raise BadValue("project_id", f"no project {row['project_id']}")
        chunk = row["chunk"]
        if not isinstance(chunk, str) or not chunk.strip():
            raise BadValue("chunk", "empty: a memory needs text")
        if row["updated_at"] is None:
            raise BadValue("updated_at", "missing")
        tags = row["tags"] or []
        if not isinstance(tags, list):
            raise BadValue("tags", "a list of strings")
        meta = {**(row["meta"] if isinstance(row["meta"], dict) else {}), "tags": tags}
        for name in ("component", "category"):
            if row[name] is not None:
                meta[name] = row[name]
        meta = clean_meta(meta, "meta")
        vector = parse_vector(row["embedding"], "embedding")
        memory_id = stable_id("vector-bridge", self.tenant, project["root_path"], row["id"])
        good = [v for v in votes if isinstance(v["helpful"], bool) and v["created_at"] is not None]
        record = new_memory(
            self.tenant, project["root_path"], memory_id, chunk, at=row["updated_at"], path=row["path"], meta=meta,
            embedding=kept_vector(vector, MODEL, self.embedder),
            helpful=sum(v["helpful"] for v in good), unhelpful=sum(not v["helpful"] for v in good))
        return Pending(row["id"], record, [FeedbackRow(memory_id, v["helpful"], v["context"], v["created_at"])
                                           for v in good])

    # ---- solutions as fixpack files -----------------------------------------------------

    def _solutions(self) -> None:
        have = self.columns["solutions"]
        counts = [c for c in ("success_count", "failure_count") if c in have]
        columns = ", ".join(["id", "title", "description", "category", *counts])
        for rows in self._pages("solutions", columns):
            ids = [row["id"] for row in rows]
            parts = {table: self._children(table, ids) for table in ("signatures", "steps", "checks")}
            for row in rows:
                self.tally.lines += 1
                fixpack = fixpack_of(row, *(parts[t].get(row["id"], []) for t in ("signatures", "steps", "checks")))
                self._import_fixpack(row["id"], fixpack)

    def _children(self, table: str, ids: list[Any]) -> dict[Any, list[dict[str, Any]]]:
        if table not in self.columns:
            return {}
        order = {"steps": "step_order", "checks": "check_order"}.get(table)
        wanted = {"signatures": ["text", "regexes", "meta"],
                  "steps": ["step_order", "kind", "payload", "description", "timeout_ms"],
                  "checks": ["check_order", "cmd", "expect_substring", "expect_exit_code", "timeout_ms"]}[table]
        present = [c for c in wanted if c in self.columns[table]]
        sort = f"{order} NULLS LAST, id" if order in self.columns[table] else "id"
        rows = self._query(f"SELECT id, solution_id, {', '.join(present)} FROM {table} "
                           f"WHERE solution_id = ANY(%s) ORDER BY {sort}", (ids,))
        found: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            found[row.pop("solution_id")].append({k: v for k, v in row.items() if k != "id" and v is not None})
        return found

    def _import_fixpack(self, source_id: Any, fixpack: dict[str, Any]) -> None:
        try:
            result = self.learning.import_solution(self.tenant, fixpack, source=f"Vector Bridge solution {source_id}")
        except InvalidInput as exc:
            self.tally.refuse(source_id, f"solutions.{exc.field or 'row'}", f"solution {source_id}: {exc.message}")
            return
        except CapsuleError as exc:
            self.tally.refuse(source_id, "solutions", f"solution {source_id}: {exc.message}")
            return
        self.solution_ids[source_id] = result.solution.id
        (self.tally.imported if result.created else self.tally.skipped)["solution"] += 1

    # ---- pattern links --------------------------------------------------------------------

    def _links(self) -> None:
        columns = "id, pattern_tag, pattern_category, solution_id, success_count, failure_count"
        for rows in self._pages("pattern_solutions", columns):
            for row in rows:
                self.tally.lines += 1
                solution = self.solution_ids.get(row["solution_id"])
                if solution is None:
                    self.tally.refuse(row["id"], "pattern_solutions.solution_id",
                                      f"link {row['id']}: solution {row['solution_id']} was not imported")
                    continue
                if not row["pattern_tag"]:
                    self.tally.refuse(row["id"], "pattern_solutions.pattern_tag", f"link {row['id']}: empty tag")
                    continue
                self._link(row, solution)

    def _link(self, row: dict[str, Any], solution: str) -> None:
        tag, category = row["pattern_tag"], row["pattern_category"] or "general"
        try:
            self.src.learning.get_pattern(self.tenant, tag, category)
        except NotFound:
            now = self.clock()
            self.src.learning.upsert_pattern(PatternRecord(
                tenant=self.tenant, tag=tag, category=category, terms=terms(tag) or [tag.lower()], occurrences=0,
                projects=[], examples=[], description="Imported with its solution links from the Vector Bridge.",
                created_at=now, updated_at=now))
        written = self.src.transfer.put_link(LinkRecord(
            tenant=self.tenant, tag=tag, category=category, kind="solution", target_id=solution,
            success=max(0, int(row["success_count"] or 0)), failure=max(0, int(row["failure_count"] or 0)),
            last_at=None))
        (self.tally.imported if written else self.tally.skipped)["link"] += 1


def fixpack_of(solution: dict[str, Any], signatures: list[dict[str, Any]], steps: list[dict[str, Any]],
               checks: list[dict[str, Any]]) -> dict[str, Any]:
    """A Vector Bridge solution and its rows as the JSON of its fixpack file (missing values left
    out, so the fixpack format's defaults apply)."""
    body = {"title": solution.get("title"), "description": solution.get("description"),
            "category": solution.get("category"), "signatures": signatures, "steps": steps, "checks": checks,
            "success_count": solution.get("success_count"), "failure_count": solution.get("failure_count")}
    return {k: v for k, v in body.items() if v is not None}
