"""Import the JSON Lines of :mod:`capsule.transfer.format` into a tenant, streaming.

Lines are read one at a time and written in batches, so a file of any size holds one
batch. Every row is validated on its own: a bad row is refused with its line number and
field and nothing of it is written, and the import goes on with the next (the result
lists and counts the refusals). Only a file that does not start with the header is
refused whole. Importing the same file again writes nothing twice: memories, solutions
and applications are keyed by id (a solution also by title and category), patterns by
tag and category, links by their pattern and target, feedback, audit records and
evidence by all of their fields.

Everything imported lands in the caller's tenant, whatever tenant the header names.
Memories are written as they were (no eviction, no dedupe window); a memory whose
model is not the deployment's is re-embedded by the backfill job like any other.

Every text that enters passes the project's secrets and personal-data policies first, as a
store's does (:mod:`capsule.guard.stored`): memories (content, explanation, meta), old
versions, votes' context and audit reasons. A memory whose content is redacted gets its
sha256 computed again and loses the carried vector (``pending_embedding``: the backfill job
embeds it); a row a ``refuse`` policy refuses is refused with its line. The result says how
many rows of each kind were redacted, and of what kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from ..core.clock import Clock, system_clock
from ..core.errors import Conflict, InvalidInput, NotFound
from ..core.learning_records import ApplicationRecord, LinkRecord, PatternRecord, SolutionRecord
from ..core.records import AuditRecord, MemoryRecord
from ..guard import stored as guard
from ..store.governance import VersionRecord
from ..store.transfer import EvidenceRow, FeedbackRow, Written
from . import format as fmt
from .export import Sources
from .report import DataImportResult, Tally

BATCH = 500
_BATCHED = ("memory", "feedback", "audit", "application", "evidence", "version")


def memory_record(tenant: str, row: fmt.Memory) -> MemoryRecord:
    return MemoryRecord(
        id=row.id,
        tenant=tenant,
        project=row.project,
        content=row.content,
        sha256=row.sha256,
        occurred_at=row.occurred_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        path=row.path,
        chunk_index=row.chunk_index,
        chunk_count=row.chunk_count,
        embedding=fmt.decode_vector(row.embedding),
        model=row.model,
        pinned=row.pinned,
        explanation=row.explanation,
        meta=dict(row.meta),
        helpful=row.helpful,
        unhelpful=row.unhelpful,
        accessed_at=row.accessed_at,
        deleted_at=row.deleted_at,
        deleted_reason=row.deleted_reason,
        status=row.status,
        retention=row.retention,
        expires_at=row.expires_at,
        supersedes=row.supersedes,
        superseded_by=row.superseded_by,
        visibility=row.visibility,
        subject=row.subject,
    )


class Importer:
    """One import run into one tenant (:meth:`run` once)."""

    def __init__(
        self, src: Sources, tenant: str, *, source: str = "the input", batch: int = BATCH, clock: Clock = system_clock
    ) -> None:
        self.src, self.tenant, self.batch, self.clock = src, tenant, batch, clock
        self.tally = Tally(source)
        self._kind: str | None = None  # the batch being gathered: its kind and (line, row)s
        self._rows: list[tuple[int, Any]] = []
        self._policy_of = src.policies or guard.store_policies(src.memories)
        self._policies: dict[str, Any] = {}  # project -> Policies (projects are few)
        self._writers: dict[str, Callable[[list[tuple[int, Any]]], None]] = {
            "memory": self._memories,
            "feedback": self._feedback,
            "audit": self._audit,
            "application": self._applications,
            "evidence": self._evidence,
            "version": self._versions,
        }

    def run(self, lines: Iterable[str | bytes]) -> DataImportResult:
        numbered = enumerate(lines, start=1)
        self._header(next(numbered, None))
        self.tally.lines = 1
        for number, line in numbered:
            self.tally.lines = number
            if not line.strip():
                continue
            try:
                row = fmt.parse_row(line)
            except fmt.BadRow as bad:
                self.tally.refuse(number, bad.field, bad.message)
                continue
            self._take(number, row)
        self._flush()
        return self.tally.result()

    def _header(self, first: tuple[int, str | bytes] | None) -> None:
        check_header(None if first is None else first[1])

    def _take(self, number: int, row: Any) -> None:
        kind = row.kind
        if self.tally.complete:
            self.tally.refuse(number, "row", "a row after the end line")
            return
        if kind != self._kind or len(self._rows) >= self.batch:
            self._flush()
        if kind in _BATCHED:
            self._kind = kind
            self._rows.append((number, row))
            return
        {
            "project": self._project,
            "solution": self._solution,
            "pattern": self._pattern,
            "link": self._link,
            "end": self._end,
            "header": self._second_header,
        }[kind](number, row)  # type: ignore[operator]

    def _flush(self) -> None:
        kind, rows = self._kind, self._rows
        self._kind, self._rows = None, []
        if kind is not None and rows:
            self._writers[kind](rows)

    # ---- the guard --------------------------------------------------------------

    def _policies_of(self, project: str) -> Any:
        if project not in self._policies:
            self._policies[project] = self._policy_of(self.tenant, project)
        return self._policies[project]

    def _guarded(self, kind: str, number: int, clean: Callable[[], tuple[Any, set[str]]]) -> Any:
        """``clean()``'s row, counted when it redacted something; None (refused with its line)
        when a ``refuse`` policy refuses it."""
        try:
            row, kinds = clean()
        except InvalidInput as refused:
            self.tally.refuse(number, refused.field or "row", refused.message)
            return None
        self.tally.guarded(kind, kinds)
        return row

    def _clean_memory(self, record: MemoryRecord) -> tuple[MemoryRecord, set[str]]:
        out, cleaned = guard.clean_memory(record, self._policies_of(record.project))
        self.tally.reembed += out.content != record.content
        return out, cleaned.kinds

    def _count(self, kind: str, numbers: list[int], written: Written) -> None:
        self.tally.imported[kind] += written.written
        self.tally.skipped[kind] += written.present
        for index, reason in sorted((written.refused or {}).items()):
            field, _, message = reason.partition(": ")
            self.tally.refuse(numbers[index], field, message)

    # ---- batched rows ---------------------------------------------------------------

    def _memories(self, rows: list[tuple[int, fmt.Memory]]) -> None:
        # Present: stored before in this tenant, or earlier in this batch (a line repeated);
        # rows of earlier batches are in the store by now, so nothing of the whole run needs
        # keeping. Ids are unique per tenant: another tenant's equal id is no obstacle, and
        # the id is kept as sent.
        present = set(self.src.transfer.existing_memories(self.tenant, [row.id for _, row in rows]))
        by_project: dict[str, list[MemoryRecord]] = {}
        for number, row in rows:
            if row.id in present:
                self.tally.skipped["memory"] += 1
                continue
            record = self._guarded("memory", number, partial(self._clean_memory, memory_record(self.tenant, row)))
            if record is None:
                continue
            by_project.setdefault(row.project, []).append(record)
            present.add(row.id)
        for project, records in by_project.items():
            self.src.transfer.put_memories(self.tenant, project, records)
            self.tally.imported["memory"] += len(records)

    def _versions(self, rows: list[tuple[int, fmt.MemoryVersion]]) -> None:
        versions, numbers = [], []
        for number, r in rows:
            version = self._guarded(
                "version",
                number,
                partial(
                    self._clean_version,
                    VersionRecord(
                        tenant=self.tenant,
                        memory_id=r.memory_id,
                        number=r.number,
                        project=r.project,
                        content=r.content,
                        sha256=r.sha256,
                        path=r.path,
                        explanation=r.explanation,
                        meta=dict(r.meta),
                        retention=r.retention,
                        expires_at=r.expires_at,
                        pinned=r.pinned,
                        created_at=r.created_at,
                        replaced_at=r.replaced_at,
                        actor=r.actor,
                        reason=r.reason,
                    ),
                ),
            )
            if version is not None:
                versions.append(version)
                numbers.append(number)
        if not versions:
            return
        written = self.src.versions.put_versions(self.tenant, versions)
        self._count("version", numbers, Written(written=written, present=len(versions) - written))

    def _clean_version(self, version: VersionRecord) -> tuple[VersionRecord, set[str]]:
        out, cleaned = guard.clean_version(version, self._policies_of(version.project))
        return out, cleaned.kinds

    def _feedback(self, rows: list[tuple[int, fmt.Feedback]]) -> None:
        # A vote's context is guarded by its memory's project's policies (one read per batch).
        voted = list({r.memory_id for _, r in rows})
        projects = {m.id: m.project for m in self.src.memories.get_many(self.tenant, voted)}
        votes, numbers = [], []
        for number, r in rows:
            policies = self._policies_of(projects.get(r.memory_id, ""))
            context = self._guarded("feedback", number, partial(guard.clean_text, r.context, policies, field="context"))
            if context is not None or r.context is None:
                votes.append(FeedbackRow(r.memory_id, r.helpful, context, r.at))
                numbers.append(number)
        if votes:
            self._count("feedback", numbers, self.src.transfer.put_feedback(self.tenant, votes))

    def _audit(self, rows: list[tuple[int, fmt.Audit]]) -> None:
        records, numbers = [], []
        for number, r in rows:
            record = self._guarded(
                "audit",
                number,
                partial(
                    guard.clean_audit,
                    AuditRecord(
                        tenant=self.tenant,
                        memory_id=r.memory_id,
                        project=r.project,
                        action=r.action,
                        actor=r.actor,
                        reason=r.reason,
                        at=r.at,
                    ),
                    self._policies_of(r.project),
                ),
            )
            if record is not None:
                records.append(record)
                numbers.append(number)
        if records:
            self._count("audit", numbers, self.src.transfer.put_audit(self.tenant, records))

    def _applications(self, rows: list[tuple[int, fmt.Application]]) -> None:
        # Application ids, like solution ids, are unique per tenant: kept as sent.
        records = [
            ApplicationRecord(
                id=r.id,
                tenant=self.tenant,
                solution_id=r.solution_id,
                success=r.success,
                at=r.at,
                project=r.project,
                error=r.error,
                context=r.context,
            )
            for _, r in rows
        ]
        self._count("application", [n for n, _ in rows], self.src.transfer.put_applications(self.tenant, records))

    def _evidence(self, rows: list[tuple[int, fmt.Evidence]]) -> None:
        found = [EvidenceRow(r.tag, r.category, r.target_kind, r.target_id, r.evidence) for _, r in rows]
        self._count("evidence", [n for n, _ in rows], self.src.transfer.put_evidence(self.tenant, found))

    # ---- single rows ----------------------------------------------------------------

    def _project(self, number: int, row: fmt.Project) -> None:
        """A project comes into being with its memories; its row brings only its own limit."""
        memories = self.src.memories
        if memories.change_markers(self.tenant, [row.name]):
            self.tally.skipped["project"] += 1
        elif row.retention_limit is not None:
            memories.set_retention_limit(self.tenant, row.name, row.retention_limit, at=self.clock())
            self.tally.imported["project"] += 1

    def _has_solution(self, solution_id: str) -> bool:
        try:
            self.src.learning.get_solution(self.tenant, solution_id)
            return True
        except NotFound:
            return False

    def _clean_solution(self, row: fmt.Solution) -> tuple[fmt.Solution, set[str]]:
        """A fixpack's every string guarded by the deployment's policies (a solution belongs to
        no project), as a created one's is; a redacted one loses its carried vectors (the backfill job
        embeds its signatures again)."""
        from ..guard.tree import TreeReport, guard_tree

        found = TreeReport()
        body = guard_tree(dict(row.body), self._policies_of(""), found, where="body")
        title = guard_tree(row.title, self._policies_of(""), found, where="title")
        if not found.redacted:
            return row, set()
        return row.model_copy(
            update={"body": body, "title": title, "embeddings": None, "dims": None, "model": None}
        ), set(found.redacted)

    def _solution(self, number: int, row: fmt.Solution) -> None:
        learning = self.src.learning
        row = self._guarded("solution", number, partial(self._clean_solution, row))
        if row is None:
            return
        # Solution ids are unique per tenant (as memory ids are): another tenant's equal id is
        # no obstacle, and the id is kept as sent.
        if self._has_solution(row.id) or learning.find_solution(self.tenant, row.title, row.category) is not None:
            self.tally.skipped["solution"] += 1
            return
        record = SolutionRecord(
            id=row.id,
            tenant=self.tenant,
            title=row.title,
            category=row.category,
            body=dict(row.body),
            created_at=row.created_at,
            updated_at=row.updated_at,
            success=row.success,
            failure=row.failure,
            embeddings=fmt.decode_vector(row.embeddings, row.signatures) if row.signatures else None,
            model=row.model,
            last_applied_at=row.last_applied_at,
            verified_on=row.verified_on,
        )
        try:
            learning.insert_solution(record)
        except Conflict:  # this tenant's own, written since the look-up above (a concurrent import)
            self.tally.skipped["solution"] += 1
            return
        self.tally.imported["solution"] += 1

    def _pattern(self, number: int, row: fmt.Pattern) -> None:
        try:
            self.src.learning.get_pattern(self.tenant, row.tag, row.category)
            self.tally.skipped["pattern"] += 1
            return
        except NotFound:
            pass
        self.src.learning.upsert_pattern(
            PatternRecord(
                tenant=self.tenant,
                tag=row.tag,
                category=row.category,
                terms=list(row.terms),
                occurrences=row.occurrences,
                projects=list(row.projects),
                examples=list(row.examples),
                description=row.description,
                created_at=row.created_at,
                updated_at=row.updated_at,
                first_seen=row.first_seen,
                last_seen=row.last_seen,
                embedding=fmt.decode_vector(row.embedding),
                model=row.model,
            )
        )
        self.tally.imported["pattern"] += 1

    def _link(self, number: int, row: fmt.Link) -> None:
        written = self.src.transfer.put_link(
            LinkRecord(
                tenant=self.tenant,
                tag=row.tag,
                category=row.category,
                kind=row.target_kind,
                target_id=row.target_id,
                success=row.success,
                failure=row.failure,
                last_at=row.last_at,
            )
        )
        (self.tally.imported if written else self.tally.skipped)["link"] += 1

    def _end(self, number: int, row: fmt.End) -> None:
        self.tally.complete = True

    def _second_header(self, number: int, row: fmt.Header) -> None:
        self.tally.refuse(number, "kind", "a second header: only the first line is the header")


def check_header(first: str | bytes | None) -> None:
    """Refuse (InvalidInput, naming line 1) an input whose first line is not the header: the one
    refusal of a whole input, which the edge also makes before it accepts an import as a job."""
    what = f"the first line must be the {fmt.FORMAT} header"
    if first is None:
        raise InvalidInput(f"the input is empty: {what}", field="line 1")
    try:
        row = fmt.parse_row(first)
    except fmt.BadRow as bad:
        raise InvalidInput(f"line 1: {bad.field}: {bad.message} ({what})", field=f"line 1: {bad.field}") from None
    if not isinstance(row, fmt.Header):
        raise InvalidInput(f"line 1 is a '{getattr(row, 'kind', '?')}' row: {what}", field="line 1: kind")


def import_lines(
    src: Sources, tenant: str, lines: Iterable[str | bytes], *, source: str = "the input", clock: Clock = system_clock
) -> DataImportResult:
    return Importer(src, tenant, source=source, clock=clock).run(lines)
