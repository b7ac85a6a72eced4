"""Import a Vector Bridge PostgreSQL database into a tenant: every column of every table its
migrations define is placed here, or named in the report's ``not_placed`` with the reason.

The tables and columns of ``mcp-servers/vector-bridge/migrations/001..007`` and where each goes
(read by name, so a database at any of those migrations, or with columns of its own, is read):

- ``projects``: ``id`` (resolves ``documents.project_id``), ``root_path`` (the project, as the
  tools named it ``project_root``), ``label``, ``created_at``, ``updated_at`` (not placed: ours is
  labelled by its root's basename and timed by its memories). A project with no documents is
  named in the report, not created.
- ``documents``: ``id`` (the memory's id, derived from it: :mod:`capsule.core.legacy_ids`, so an old
  ``chunk_id`` still names the memory), ``project_id``, ``path``, ``chunk`` (content), ``embedding``
  (read as text, pgvector's text form, so a plain text column stands in where the extension is
  missing; kept when this deployment embeds with the Vector Bridge's model, text-embedding-3-small
  1536-d, else the memory waits for the backfill job and the report says so), ``meta`` (kept as
  sent: :func:`capsule.compat.vector_bridge.meta_request`), ``component``, ``category``, ``tags``
  (our meta fields; the raw ``meta`` values they overrule are kept), ``content_sha`` (our sha256:
  the same SHA-256 of the text, checked), ``updated_at`` (occurred/created/updated), ``repo_name``
  (002; not placed: the basename of its project's root), ``chunk_tsv`` (005; not placed: a
  full-text index of ``chunk``, which ours rebuilds).
- ``memory_feedback`` (006): ``chunk_id``, ``helpful``, ``context``, ``created_at`` (a vote each,
  and the memory's helpful/unhelpful counters); ``id`` not placed (a row number).
- ``solutions`` (003): a fixpack per row, built as the fixpack file's JSON and passed through the
  fixpack import (:meth:`LearningService.import_solution`) under an id derived from ``id`` (an old
  ``solution_id`` still names it): ``title``, ``description``, ``category``, ``component``,
  ``tags``, ``package_manager``, ``monorepo_tool``, ``project_root``, ``repo_name``,
  ``success_count``, ``failure_count``, ``last_applied_at``, ``verified_on``, ``created_at``,
  ``updated_at`` (the ones the fixpack model does not name are kept under its ``extra``).
- ``signatures``: ``solution_id``, ``text``, ``regexes``, ``meta``; ``embedding`` (re-embedded
  from ``text`` by this deployment), ``id``, ``created_at`` not placed.
- ``steps``: ``solution_id``, ``step_order``, ``kind``, ``payload``, ``description``,
  ``timeout_ms``; ``id``, ``created_at`` not placed.
- ``checks``: ``solution_id``, ``check_order``, ``cmd``, ``expect_substring``,
  ``expect_exit_code``, ``timeout_ms``; ``id``, ``created_at`` not placed.
- ``pattern_solutions`` (007): ``pattern_tag``, ``pattern_category``, ``solution_id``,
  ``success_count``, ``failure_count``, ``updated_at`` (the link's last use); ``id``,
  ``created_at`` and ``avg_helpful_ratio`` (only a maintenance function no tool called set it)
  not placed.

Idempotent: memory and solution ids are derived from the tenant and the row's id, so a re-run
finds them (skipped as present, left as they are); a memory with the content of an active memory
of the project is skipped too; links dedupe on their pattern and solution. Where a derived id is
already taken by something else (a second Vector Bridge database imported into the same tenant),
the row gets another id and the report says that its old number names the first one. A row that
cannot be imported is refused with its table, id and field, and nothing of it is written.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from ..compat.vector_bridge import KEPT_KEY, meta_request
from ..core import legacy_ids
from ..core.clock import Clock, system_clock
from ..core.errors import CapsuleError, InvalidInput, NotFound, Unavailable
from ..core.learning_records import LinkRecord, PatternRecord
from ..core.models import MemoryMeta
from ..core.project_identity import absorb_bare, canonical, label_of
from ..core.retention import NO_LIMIT
from ..core.text import sha256
from ..embedders.base import Embedder
from ..learning.signature import terms
from ..store.transfer import FeedbackRow
from .export import Sources
from .foreign import BadValue, Pending, kept_vector, new_memory, parse_vector, stable_id, write_memories
from .report import DataImportResult, Tally

MODEL = "text-embedding-3-small"  # the Vector Bridge's embedder (1536-d)
PAGE = 500
REQUIRED = {
    "projects": {"id", "root_path"},
    "documents": {
        "id",
        "project_id",
        "path",
        "chunk",
        "embedding",
        "component",
        "category",
        "tags",
        "meta",
        "updated_at",
    },
}

# Every column of the migrations' tables that is read and placed (see the module doc) ...
PLACED: dict[str, set[str]] = {
    "projects": {"id", "root_path"},
    "documents": {
        "id",
        "project_id",
        "path",
        "chunk",
        "embedding",
        "meta",
        "component",
        "category",
        "tags",
        "content_sha",
        "updated_at",
    },
    "memory_feedback": {"chunk_id", "helpful", "context", "created_at"},
    "solutions": {
        "id",
        "title",
        "description",
        "category",
        "component",
        "tags",
        "project_root",
        "repo_name",
        "package_manager",
        "monorepo_tool",
        "success_count",
        "failure_count",
        "last_applied_at",
        "verified_on",
        "created_at",
        "updated_at",
    },
    "signatures": {"solution_id", "text", "regexes", "meta"},
    "steps": {"solution_id", "step_order", "kind", "payload", "description", "timeout_ms"},
    "checks": {"solution_id", "check_order", "cmd", "expect_substring", "expect_exit_code", "timeout_ms"},
    "pattern_solutions": {
        "pattern_tag",
        "pattern_category",
        "solution_id",
        "success_count",
        "failure_count",
        "updated_at",
    },
}
# ... and every one that is not, with the reason the report gives.
_ROW_NUMBER = "a row number; the row itself is placed whole"
_PART_TIME = "when the row was written; its solution keeps the solution's own times"
NOT_PLACED: dict[str, dict[str, str]] = {
    "projects": {
        "label": "a project here is labelled by the basename of its root path, not by a stored label",
        "created_at": "a project here is timed by its memories",
        "updated_at": "a project here is timed by its memories",
    },
    "documents": {
        "repo_name": "the basename of its project's root path, which the project keeps",
        "chunk_tsv": "a full-text index of chunk; this store indexes the content itself",
    },
    "memory_feedback": {"id": _ROW_NUMBER},
    "signatures": {
        "id": _ROW_NUMBER,
        "created_at": _PART_TIME,
        "embedding": "a vector of text; this deployment embeds each signature's text itself",
    },
    "steps": {"id": _ROW_NUMBER, "created_at": _PART_TIME},
    "checks": {"id": _ROW_NUMBER, "created_at": _PART_TIME},
    "pattern_solutions": {
        "id": _ROW_NUMBER,
        "created_at": "when the link was first made; its last use (updated_at) is kept",
        "avg_helpful_ratio": (
            "set only by a maintenance function no tool called (0 in practice); links here "
            "rank by their success and failure counts"
        ),
    },
}
PARTS = {
    "signatures": ["text", "regexes", "meta"],
    "steps": ["step_order", "kind", "payload", "description", "timeout_ms"],
    "checks": ["check_order", "cmd", "expect_substring", "expect_exit_code", "timeout_ms"],
}
RAW_META_KEY = "value"  # where a documents.meta that is not a JSON object is kept


def import_vector_bridge(
    src: Sources,
    tenant: str,
    uri: str,
    *,
    embedder: Embedder,
    learning: Any,
    connect: Callable[[str], Any] | None = None,
    clock: Clock = system_clock,
    page: int = PAGE,
) -> DataImportResult:
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
    def __init__(
        self, src: Sources, tenant: str, conn: Any, embedder: Embedder, learning: Any, clock: Clock, page: int
    ) -> None:
        self.src, self.tenant, self.conn, self.embedder = src, tenant, conn, embedder
        self.learning, self.clock, self.page = learning, clock, page
        self.tally = Tally("the Vector Bridge database", unit="row")
        self.tally.complete = True  # a database is read whole, never cut short
        self.columns = self._columns()
        self.solution_ids: dict[Any, str] = {}  # Vector Bridge solution id -> ours
        self.taken: dict[str, list[Any]] = defaultdict(list)  # kind -> old ids another import holds
        self.odd_meta: list[Any] = []  # documents whose meta was no JSON object
        self.other_sha: list[Any] = []  # documents whose content_sha is not the SHA-256 of their chunk

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
        rows = self._query(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()"
        )
        found: dict[str, set[str]] = defaultdict(set)
        for row in rows:
            found[row["table_name"]].add(row["column_name"])
        for table, needed in REQUIRED.items():
            if table not in found:
                raise InvalidInput(f"the database has no table '{table}': not a Vector Bridge database", field=table)
            missing = sorted(needed - found[table])
            if missing:
                raise InvalidInput(
                    f"table '{table}' lacks column(s) {', '.join(missing)} of the Vector Bridge schema",
                    field=f"{table}.{missing[0]}",
                )
        return found

    def _present(self, table: str, wanted: list[str]) -> list[str]:
        return [c for c in wanted if c in self.columns.get(table, set())]

    def _pages(self, table: str, columns: str, where: str = "TRUE") -> Iterator[list[dict[str, Any]]]:
        last: Any = None
        while True:
            keyed = where if last is None else f"({where}) AND id > %s"
            rows = self._query(
                f"SELECT {columns} FROM {table} WHERE {keyed} ORDER BY id LIMIT %s",
                (() if last is None else (last,)) + (self.page,),
            )
            if not rows:
                return
            yield rows
            last = rows[-1]["id"]

    # ---- the run ----------------------------------------------------------------------

    def _project_ready(self, name: str) -> None:
        """Before the first memory of a project is written: the bare project of its label (written
        by Capsule under the folder's name) merged into it, and no rolling limit, as the Vector
        Bridge had none -- unless its user set one, which is kept and reported."""
        ready = self.__dict__.setdefault("_ready_projects", set())
        if name in ready:
            return
        ready.add(name)
        merged = absorb_bare(self.src.memories, self.tenant, name, at=self.clock())
        if merged:
            self.tally.notes.append(
                f"Project '{label_of(name)}' (the folder's name) was merged into '{name}', the "
                f"same checkout: {merged.get('moved', 0)} memories moved."
            )
        kept = self.src.memories.set_retention_limit_if_unset(self.tenant, name, NO_LIMIT, at=self.clock())
        if kept not in (None, NO_LIMIT):
            self.tally.notes.append(
                f"Project '{name}' keeps the retention limit of {kept} set before the import: where the import leaves"
                " it holding more, the next store evicts the oldest unpinned ones beyond it and names them"
                " (set its retention_limit to 'unlimited' to keep them all)."
            )

    def run(self) -> DataImportResult:
        # One checkout, one project: the root path as the service names it (capsule.core.project_identity).
        projects = {
            row["id"]: {
                **row,
                "root_path": canonical(row["root_path"]) if isinstance(row["root_path"], str) else row["root_path"],
            }
            for row in self._query("SELECT id, root_path FROM projects")
        }
        used = self._documents(projects)
        empty = sorted(str(p["root_path"]) for key, p in projects.items() if key not in used and p["root_path"])
        if empty:
            self.tally.notes.append(
                f"{len(empty)} project(s) had no documents and were not created here (one is, once something is "
                f"stored in it): {', '.join(empty[:10])}{', ...' if len(empty) > 10 else ''}."
            )
        if {"solutions", "signatures"} <= set(self.columns):
            self._solutions()
        if "pattern_solutions" in self.columns:
            self._links()
        self._notes()
        return self.tally.result()

    def embedder_matches(self) -> bool:
        return self.embedder.model_id == MODEL

    def _notes(self) -> None:
        notes = self.tally.notes
        if not self.embedder_matches():
            notes.append(
                f"Vectors were made by {MODEL}; this deployment embeds with {self.embedder.model_id}: the memories "
                "are found by keyword now, and the backfill job (capsule jobs run backfill) embeds them."
            )
        for kind, ids in self.taken.items():
            shown = ", ".join(map(str, ids[:10])) + (", ..." if len(ids) > 10 else "")
            notes.append(
                f"{len(ids)} {kind} id(s) of this database ({shown}) already name a {kind} imported here from "
                f"another Vector Bridge database: these were given new ids, and their old numbers keep naming "
                f"the first import's."
            )
        if self.odd_meta:
            notes.append(
                f"The meta of {len(self.odd_meta)} document(s) was not a JSON object "
                f"({', '.join(map(str, self.odd_meta[:10]))}): kept whole as meta.{RAW_META_KEY}."
            )
        if self.other_sha:
            notes.append(
                f"The content_sha of {len(self.other_sha)} document(s) was not the SHA-256 of its chunk "
                f"({', '.join(map(str, self.other_sha[:10]))}): the memories carry their content's own."
            )
        if not self.embedder_matches() and "embedding" in self.columns.get("documents", set()):
            self.tally.unplaced(
                "documents.embedding",
                f"made by {MODEL}; this deployment embeds with {self.embedder.model_id}, so the "
                "backfill job embeds the memories again",
            )
        for table in sorted(self.columns):
            known, skipped = PLACED.get(table), NOT_PLACED.get(table, {})
            if known is None:
                self.tally.unplaced(f"{table}.*", "not a table of the Vector Bridge's migrations: not read")
                continue
            for column in sorted(self.columns[table]):
                if column in skipped:
                    self.tally.unplaced(f"{table}.{column}", skipped[column])
                elif column not in known:
                    self.tally.unplaced(f"{table}.{column}", "not a column of the Vector Bridge's migrations: not read")

    # ---- documents and their feedback -----------------------------------------------

    def _documents(self, projects: dict[Any, dict[str, Any]]) -> set[Any]:
        optional = self._present("documents", ["content_sha"])
        columns = ", ".join(
            [
                "id, project_id, path, chunk, embedding::text AS embedding, component, category, tags, "
                "meta, updated_at",
                *optional,
            ]
        )
        used: set[Any] = set()
        for rows in self._pages("documents", columns):
            votes = self._votes([row["id"] for row in rows])
            batches: dict[str, list[Pending]] = defaultdict(list)
            for row in rows:
                self.tally.lines += 1
                used.add(row["project_id"])
                try:
                    pending = self._memory(row, projects, votes.get(row["id"], []))
                except BadValue as bad:
                    self.tally.refuse(row["id"], f"documents.{bad.field}", f"document {row['id']}: {bad.message}")
                    continue
                batches[pending.record.project].append(pending)
            for batch in batches.values():
                write_memories(self.src, self.tenant, self._placed(batch), self.tally)
        return used

    def _votes(self, ids: list[Any]) -> dict[Any, list[dict[str, Any]]]:
        if "memory_feedback" not in self.columns:
            return {}
        rows = self._query(
            "SELECT id, chunk_id, helpful, context, created_at FROM memory_feedback "
            "WHERE chunk_id = ANY(%s) ORDER BY id",
            (ids,),
        )
        found: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            found[row["chunk_id"]].append(row)
        return found

    def _memory(self, row: dict[str, Any], projects: dict[Any, dict[str, Any]], votes: list[dict[str, Any]]) -> Pending:
        project = projects.get(row["project_id"])
        if project is None or not project["root_path"]:
            raise BadValue("project_id", f"no project {row['project_id']}")
        chunk = row["chunk"]
        if not isinstance(chunk, str) or not chunk.strip():
            raise BadValue("chunk", "empty: a memory needs text")
        if row["updated_at"] is None:
            raise BadValue("updated_at", "missing")
        meta = self._meta(row)
        vector = parse_vector(row["embedding"], "embedding")
        if row.get("content_sha") not in (None, sha256(chunk)):
            self.other_sha.append(row["id"])
        self._project_ready(project["root_path"])
        number = legacy_ids.old_number(row["id"])
        memory_id = (
            legacy_ids.vector_bridge_memory(self.tenant, number)
            if number is not None
            else stable_id("vector-bridge", self.tenant, project["root_path"], row["id"])
        )
        good = [v for v in votes if isinstance(v["helpful"], bool) and v["created_at"] is not None]
        record = new_memory(
            self.tenant,
            project["root_path"],
            memory_id,
            chunk,
            at=row["updated_at"],
            path=row["path"],
            meta=meta,
            embedding=kept_vector(vector, MODEL, self.embedder),
            helpful=sum(v["helpful"] for v in good),
            unhelpful=sum(not v["helpful"] for v in good),
        )
        return Pending(
            row["id"], record, [FeedbackRow(memory_id, v["helpful"], v["context"], v["created_at"]) for v in good]
        )

    def _meta(self, row: dict[str, Any]) -> dict[str, Any]:
        """The document's meta as sent, with its component/category/tags columns as our meta fields
        (what the Vector Bridge searched by); a raw value they overrule is kept (meta_as_sent)."""
        raw = row["meta"]
        if raw is not None and not isinstance(raw, dict):
            self.odd_meta.append(row["id"])
            raw = {RAW_META_KEY: raw}
        raw = raw or {}
        try:
            typed = meta_request(raw)
        except InvalidInput as exc:
            raise BadValue("meta", exc.message) from None
        columns = {name: row[name] for name in ("component", "category") if row[name] is not None}
        tags = row["tags"]
        if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
            raise BadValue("tags", "a list of strings")
        if tags:
            columns["tags"] = list(dict.fromkeys(t for t in tags if t.strip()))
        kept = _kept(typed)
        changed = False
        for name, value in columns.items():
            if typed.get(name) == value:
                continue
            if name in raw:
                kept["sent"].setdefault(name, raw[name])
            elif name not in kept["added"]:
                kept["added"].append(name)
            typed[name], changed = value, True
        if changed:
            typed[KEPT_KEY] = json.dumps(kept, ensure_ascii=False, separators=(",", ":"))
        try:
            return MemoryMeta.model_validate(typed).plain()
        except ValidationError as exc:  # a column value our meta cannot hold
            err = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in err["loc"])
            raise BadValue(where or "meta", err["msg"]) from None

    def _placed(self, batch: list[Pending]) -> list[Pending]:
        """The batch with each memory whose derived id another import's memory holds given its own."""
        derived = {p.record.id: p for p in batch}
        held = self.src.memories.get_many(self.tenant, list(derived))
        for record in held:
            item = derived[record.id]
            mine = item.record
            if record.sha256 == mine.sha256 or (record.path, record.created_at) == (mine.path, mine.created_at):
                continue  # this import's, from an earlier run: skipped as present
            self.taken["document"].append(item.row)
            other = stable_id("vector-bridge", self.tenant, mine.project, item.row)
            mine.id = other
            item.votes = [replace(vote, memory_id=other) for vote in item.votes]
        return batch

    # ---- solutions as fixpack files -----------------------------------------------------

    def _solutions(self) -> None:
        columns = ", ".join(self._present("solutions", sorted(PLACED["solutions"])))
        for rows in self._pages("solutions", columns):
            ids = [row["id"] for row in rows]
            parts = {table: self._children(table, ids) for table in PARTS}
            for row in rows:
                self.tally.lines += 1
                fixpack = fixpack_of(row, *(parts[t].get(row["id"], []) for t in PARTS))
                self._import_fixpack(row["id"], fixpack)

    def _children(self, table: str, ids: list[Any]) -> dict[Any, list[dict[str, Any]]]:
        if table not in self.columns:
            return {}
        order = {"steps": "step_order", "checks": "check_order"}.get(table)
        present = self._present(table, PARTS[table])
        sort = f"{order} NULLS LAST, id" if order in self.columns[table] else "id"
        rows = self._query(
            f"SELECT id, solution_id, {', '.join(present)} FROM {table} WHERE solution_id = ANY(%s) ORDER BY {sort}",
            (ids,),
        )
        found: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            found[row.pop("solution_id")].append({k: v for k, v in row.items() if k != "id" and v is not None})
        return found

    def _import_fixpack(self, source_id: Any, fixpack: dict[str, Any]) -> None:
        number = legacy_ids.old_number(source_id)
        wanted = None if number is None else legacy_ids.vector_bridge_solution(self.tenant, number)
        present = self._solution(wanted)
        if present is not None:
            if _same_solution(present, fixpack):
                self.solution_ids[source_id] = present.id
                self.tally.skipped["solution"] += 1
                return
            self.taken["solution"].append(source_id)
            wanted = None
        try:
            result = self.learning.import_solution(
                self.tenant,
                fixpack,
                source=f"Vector Bridge solution {source_id}",
                **({"solution_id": wanted} if wanted else {}),
            )
        except InvalidInput as exc:
            self.tally.refuse(source_id, f"solutions.{exc.field or 'row'}", f"solution {source_id}: {exc.message}")
            return
        except CapsuleError as exc:
            self.tally.refuse(source_id, "solutions", f"solution {source_id}: {exc.message}")
            return
        self.solution_ids[source_id] = result.solution.id
        (self.tally.imported if result.created else self.tally.skipped)["solution"] += 1

    def _solution(self, solution_id: str | None) -> Any:
        if solution_id is None:
            return None
        try:
            return self.src.learning.get_solution(self.tenant, solution_id)
        except NotFound:
            return None

    # ---- pattern links --------------------------------------------------------------------

    def _links(self) -> None:
        columns = ", ".join(["id", *self._present("pattern_solutions", sorted(PLACED["pattern_solutions"]))])
        for rows in self._pages("pattern_solutions", columns):
            for row in rows:
                self.tally.lines += 1
                solution = self.solution_ids.get(row.get("solution_id"))
                if solution is None:
                    self.tally.refuse(
                        row["id"],
                        "pattern_solutions.solution_id",
                        f"link {row['id']}: solution {row.get('solution_id')} was not imported",
                    )
                    continue
                if not row.get("pattern_tag"):
                    self.tally.refuse(row["id"], "pattern_solutions.pattern_tag", f"link {row['id']}: empty tag")
                    continue
                self._link(row, solution)

    def _link(self, row: dict[str, Any], solution: str) -> None:
        tag, category = row["pattern_tag"], row.get("pattern_category") or "general"
        try:
            self.src.learning.get_pattern(self.tenant, tag, category)
        except NotFound:
            now = self.clock()
            self.src.learning.upsert_pattern(
                PatternRecord(
                    tenant=self.tenant,
                    tag=tag,
                    category=category,
                    terms=terms(tag) or [tag.lower()],
                    occurrences=0,
                    projects=[],
                    examples=[],
                    description="Imported with its solution links from the Vector Bridge.",
                    created_at=now,
                    updated_at=now,
                )
            )
        written = self.src.transfer.put_link(
            LinkRecord(
                tenant=self.tenant,
                tag=tag,
                category=category,
                kind="solution",
                target_id=solution,
                success=max(0, int(row.get("success_count") or 0)),
                failure=max(0, int(row.get("failure_count") or 0)),
                last_at=row.get("updated_at"),
            )
        )
        (self.tally.imported if written else self.tally.skipped)["link"] += 1


def _kept(typed: dict[str, Any]) -> dict[str, Any]:
    """The record meta_request kept of what was sent ({"sent", "added"}), taken out of ``typed``."""
    text = typed.pop(KEPT_KEY, None)
    try:
        kept = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        kept = {}
    return {"sent": dict(kept.get("sent") or {}), "added": list(kept.get("added") or [])}


def _same_solution(present: Any, fixpack: dict[str, Any]) -> bool:
    """Whether the solution holding a derived id is this row's, written by an earlier run: its
    row's creation time, else its title and category (the guard may have redacted a title)."""
    extra = (getattr(present, "body", None) or {}).get("extra") or {}
    if fixpack.get("created_at") is not None and extra.get("created_at") == fixpack["created_at"]:
        return True
    return (present.title, present.category) == (fixpack.get("title"), fixpack.get("category", present.category))


def fixpack_of(
    solution: dict[str, Any],
    signatures: list[dict[str, Any]],
    steps: list[dict[str, Any]],
    checks: list[dict[str, Any]],
) -> dict[str, Any]:
    """A Vector Bridge solution and its rows as the JSON of its fixpack file: every column of the
    row (the ones the fixpack model does not name are kept under its ``extra``); a null is a
    missing value, so the fixpack format's default applies."""
    body = {key: _json(value) for key, value in solution.items() if key != "id"}
    body.update(signatures=signatures, steps=steps, checks=checks)
    return {k: v for k, v in body.items() if v is not None}


def _json(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
