"""Solutions (fixpacks) and error patterns: what makes the memory better with use.

:class:`LearningService` is given its learning store, the memory store (mining reads the
memories), an embedder and a clock. Every operation is scoped by the caller's tenant,
validates its request at the edge (:mod:`.models`) and returns a result with an
``explanation``. The method names are the MCP tool names where there is one:
``solution_search``, ``solution_apply``, ``pattern_detect``, ``pattern_solutions``,
``pattern_link``, ``golden_paths``, ``detect_patterns``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core import legacy_ids
from ..core.clock import Clock, system_clock
from ..core.cursor import decode_cursor, encode_cursor
from ..core.errors import NotFound, Unavailable
from ..core.fielderrors import validate
from ..core.learning_records import ApplicationRecord, PatternRecord, SolutionRecord
from ..core.records import MemoryRecord
from ..embedders.base import Embedder
from ..guard.policy import Policies
from ..guard.tree import TreeReport, guard_tree
from ..store.base import MemoryStore
from ..store.learning import LearningStore
from . import fixpack_format, mining, mining_pages, models
from .patterns import MAX_PATTERNS_SCANNED, Patterns
from .solution_search import SolutionSearch
from .views import rate as _rate
from .views import to_pattern, to_solution

SEARCH_EMBED_BUDGET = 64  # solutions a search may embed (the rest wait for the backfill job)


# The solution's record, not its content: the body a store keeps leaves them out.
RECORD_FIELDS = {"success_count", "failure_count", "last_applied_at", "verified_on"}


def _import_notes(fixpack: models.Fixpack) -> str:
    """What the import did beyond reading the file: the keys it kept, how it read the payloads,
    the orders it gave."""
    notes = ""
    if fixpack.kept:
        notes += (
            f" Kept unknown keys as written (a step payload's in the payload, others under 'extra'): "
            f"{', '.join(fixpack.kept)}."
        )
    if fixpack.other_kinds:
        notes += f" Kept as written, of a kind this format does not interpret: {', '.join(fixpack.other_kinds)}."
    if fixpack.interpreted:
        notes += f" Read (and kept as written): {', '.join(fixpack.interpreted)}."
    if fixpack.doubled:
        notes += f" {'; '.join(fixpack.doubled)} (both kept)."
    if fixpack.numbered:
        notes += f" Numbered by their place in the file (no order given): {', '.join(fixpack.numbered)}."
    return notes


def _guard_env_values(body: dict[str, Any], guard: Policies, found: TreeReport) -> dict[str, Any]:
    """An env step's value guarded under its variable's name as well (``{variable, value}`` as
    written, not ``{NAME: value}``): a secret recognised only by the name it is assigned to
    (AWS_SECRET_ACCESS_KEY=...) is found as it is in a {NAME: value} map."""
    for place, step in enumerate(body["steps"]):
        if step["kind"] != "env":
            continue
        reading = fixpack_format.interpret("env", step["payload"])
        name, spelling = reading.view["key"], reading.used.get("value")
        if isinstance(name, str) and spelling and isinstance(step["payload"][spelling], str):
            step["payload"][spelling] = guard_tree(
                step["payload"][spelling], guard, found, where=f"steps.{place}.payload.{spelling}", key=name
            )
    return body


class LearningService:
    def __init__(
        self,
        store: LearningStore,
        memories: MemoryStore,
        embedder: Embedder,
        *,
        clock: Clock = system_clock,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        mining_options: mining.MiningOptions = mining.MiningOptions(),  # noqa: B008 - frozen
        search_embed_budget: int = SEARCH_EMBED_BUDGET,
        guard: Policies = Policies(),  # noqa: B008 - a named tuple
    ) -> None:
        self.guard = guard
        self.store = store
        self.memories = memories
        self.embedder = embedder
        self.clock = clock
        self._new_id = new_id
        self.mining_options = mining_options
        self.search_embed_budget = search_embed_budget
        self._search = SolutionSearch(store, embedder)
        self._patterns = Patterns(store, memories, embedder, clock, self._search.stale)

    # ---- helpers ------------------------------------------------------------

    def _embed(self, texts: Sequence[str], kind: str = "document") -> np.ndarray | None:
        if not texts:
            return None
        try:
            return self.embedder.embed(list(texts), kind=kind)
        except Unavailable:
            return None  # signatures are embedded later, on the first search that can

    def _record(self, tenant: str, fixpack: models.Fixpack, solution_id: str | None = None) -> SolutionRecord:
        return self._guarded_record(tenant, fixpack, solution_id)[0]

    def _guarded_record(
        self, tenant: str, fixpack: models.Fixpack, solution_id: str | None = None
    ) -> tuple[SolutionRecord, str]:
        """The record and a note for the explanation of what the guard found."""
        now = self.clock()
        # Secrets and personal data in any of its texts, by the deployment's policies, before it
        # is embedded or stored (capsule.guard); the note for the explanation says what was found.
        found = TreeReport()
        body = _guard_env_values(
            guard_tree(fixpack.model_dump(mode="json", exclude=RECORD_FIELDS), self.guard, found), self.guard, found
        )
        vectors = self._embed([s["text"] for s in body["signatures"]])
        return SolutionRecord(
            id=solution_id or self._new_id(),
            tenant=tenant,
            title=body["title"],
            category=body["category"],
            body=body,
            created_at=now,
            updated_at=now,
            success=fixpack.success_count,
            failure=fixpack.failure_count,
            embeddings=vectors,
            model=None if vectors is None else self.embedder.model_id,
            last_applied_at=fixpack.last_applied_at,
            verified_on=fixpack.verified_on,
        ), found.note()

    @staticmethod
    def _keep_history(record: SolutionRecord, current: SolutionRecord) -> None:
        """A replaced solution keeps what only solution_apply changes: its counts and times."""
        record.created_at, record.success, record.failure = current.created_at, current.success, current.failure
        record.last_applied_at, record.verified_on = current.last_applied_at, current.verified_on

    # ---- solutions: create, read, update, delete, import ---------------------

    def create_solution(self, tenant: str, body: models.Fixpack | dict) -> models.SolutionResult:
        fixpack = validate(models.Fixpack, body)
        record, guard_note = self._guarded_record(tenant, fixpack)
        self.store.insert_solution(record)
        return models.SolutionResult(
            solution=to_solution(record),
            explanation=(
                f"Created solution {record.id} '{record.title}' ({record.category}) with "
                f"{len(fixpack.signatures)} signature(s), {len(fixpack.steps)} step(s) and "
                f"{len(fixpack.checks)} check(s)."
            )
            + self._embedding_note(record)
            + guard_note,
        )

    def _embedding_note(self, record: SolutionRecord) -> str:
        if record.embeddings is None:
            return " The embedder is unavailable: its signatures match by regex and keyword until a search embeds them."
        return ""

    def named_solution(self, tenant: str, solution_id: str) -> str:
        """The solution id ``solution_id`` names: itself, unless it is a number that is no
        solution's id while the Vector Bridge solution of that number was imported here."""
        number = legacy_ids.old_number(solution_id)
        if number is None:
            return solution_id
        for candidate in (str(solution_id), legacy_ids.vector_bridge_solution(tenant, number)):
            try:
                return self.store.get_solution(tenant, candidate).id
            except NotFound:
                continue
        return str(solution_id)

    def get_solution(self, tenant: str, solution_id: str) -> models.SolutionResult:
        solution_id = self.named_solution(tenant, solution_id)
        record = self.store.get_solution(tenant, solution_id)
        return models.SolutionResult(
            solution=to_solution(record),
            explanation=f"Solution {solution_id}: applied {record.success + record.failure} times, "
            f"{record.success} successfully.",
        )

    def list_solutions(
        self, tenant: str, request: models.ListSolutionsRequest | dict | None = None
    ) -> models.SolutionList:
        req = validate(models.ListSolutionsRequest, request or {})
        after = decode_cursor(req.cursor) if req.cursor else None
        rows = self.store.list_solutions(tenant, category=req.category, after=after, limit=req.limit + 1)
        page, more = rows[: req.limit], len(rows) > req.limit
        scope = f" in category '{req.category}'" if req.category else ""
        return models.SolutionList(
            solutions=[to_solution(r) for r in page],
            next_cursor=encode_cursor(page[-1]) if more else None,  # type: ignore[arg-type]  # any row with created_at and id
            explanation=f"{len(page)} solution(s){scope}, newest first"
            + ("; more follow the cursor." if more else "."),
        )

    def update_solution(self, tenant: str, solution_id: str, body: models.Fixpack | dict) -> models.SolutionResult:
        solution_id = self.named_solution(tenant, solution_id)
        fixpack = validate(models.Fixpack, body)
        current = self.store.get_solution(tenant, solution_id)
        record, guard_note = self._guarded_record(tenant, fixpack, solution_id)
        self._keep_history(record, current)
        self.store.replace_solution(record)
        return models.SolutionResult(
            solution=to_solution(record),
            explanation=(
                f"Replaced solution {solution_id}. Its success and failure counts "
                f"({current.success}/{current.failure}) are kept: only solution_apply changes them."
            )
            + self._embedding_note(record)
            + guard_note,
        )

    def delete_solution(self, tenant: str, solution_id: str) -> models.DeleteResult:
        solution_id = self.named_solution(tenant, solution_id)
        self.store.delete_solution(tenant, solution_id)
        return models.DeleteResult(
            id=solution_id,
            deleted=True,
            explanation=f"Deleted solution {solution_id}, its applications and its links to patterns.",
        )

    def import_solution(
        self,
        tenant: str,
        body: Any,
        *,
        source: str | None = None,
        solution_id: str | None = None,
        always_new: bool = False,
    ) -> models.ImportResult:
        """Import one fixpack as it is (ours or the Vector Bridge's): any step kind and payload
        object, kept as written; keys this format does not know are kept where they were, and
        named. The fixpack's counts and times (``success_count``, ``failure_count``,
        ``last_applied_at``, ``verified_on``) become a new solution's. A fixpack with the title and
        category of an existing solution replaces its content (keeping its counts and times), so
        importing the same file twice changes nothing; ``always_new`` inserts a new solution
        whatever exists, as the Vector Bridge's ``solution_upsert`` did.
        With ``solution_id`` (a database row's own id, :mod:`capsule.core.legacy_ids`) it is a new
        solution of that id: a database's rows are distinct solutions even where titles repeat."""
        fixpack = models.read_fixpack_file(body)
        existing = (
            None if solution_id or always_new else self.store.find_solution(tenant, fixpack.title, fixpack.category)
        )
        origin = f" from {source}" if source else ""
        notes = _import_notes(fixpack)
        if existing is None:
            record, guard_note = self._guarded_record(tenant, fixpack, solution_id)
            self.store.insert_solution(record)
            return models.ImportResult(
                solution=to_solution(record),
                created=True,
                kept_fields=fixpack.kept,
                explanation=f"Imported '{record.title}'{origin} as new solution {record.id}.{notes}"
                + self._embedding_note(record)
                + guard_note,
            )
        record, guard_note = self._guarded_record(tenant, fixpack, existing.id)
        self._keep_history(record, existing)
        self.store.replace_solution(record)
        return models.ImportResult(
            solution=to_solution(record),
            created=False,
            kept_fields=fixpack.kept,
            explanation=(
                f"Solution {existing.id} already had the title '{record.title}' in category "
                f"'{record.category}': replaced its content{origin}, kept its counts.{notes}"
            )
            + guard_note,
        )

    # ---- solution_search and solution_apply ---------------------------------

    def _stale(self, record: SolutionRecord) -> bool:
        return self._search.stale(record)

    def embed_solutions(self, records: Sequence[SolutionRecord], *, limit: int) -> int:
        """Embed the signatures of up to ``limit`` solutions that have none under the current
        model, in one call; updates ``records`` in place. Raises Unavailable when the embedder is down."""
        return self._search.embed_solutions(records, limit=limit)

    def solution_search(self, tenant: str, request: models.SolutionSearchRequest | dict) -> models.SolutionSearchResult:
        req = validate(models.SolutionSearchRequest, request)
        return self._search.search(tenant, req, embed_budget=self.search_embed_budget)

    def solution_apply(self, tenant: str, solution_id: str, request: models.ApplyRequest | dict) -> models.ApplyResult:
        solution_id = self.named_solution(tenant, solution_id)
        req = validate(models.ApplyRequest, request)
        application = ApplicationRecord(
            id=self._new_id(),
            tenant=tenant,
            solution_id=solution_id,
            success=req.success,
            at=self.clock(),
            project=req.project,
            error=req.error,
            context=req.context,
        )
        record = self.store.record_application(application)
        outcome = "success" if req.success else "failure"
        text = (
            f"Recorded a {outcome} for solution {solution_id}: {record.success} success(es), "
            f"{record.failure} failure(s), success rate (Wilson) {_rate(record.success, record.failure):.2f}."
        )
        pattern = None
        if req.pattern is not None:
            found, created = self._patterns.pattern_or_new(tenant, req.pattern.tag, req.pattern.category)
            self.store.link(
                tenant,
                found.tag,
                found.category,
                "solution",
                solution_id,
                success=req.success,
                at=application.at,
                evidence=f"application:{application.id}",
            )
            pattern = to_pattern(self._patterns.profile_linked(tenant, found))
            text += f" Also counted for pattern '{found.tag}'" + (" (created)." if created else ".")
        return models.ApplyResult(solution=to_solution(record), pattern=pattern, explanation=text)

    # ---- patterns -----------------------------------------------------------

    def pattern_detect(self, tenant: str, request: models.PatternDetectRequest | dict) -> models.PatternDetectResult:
        return self._patterns.detect(tenant, validate(models.PatternDetectRequest, request))

    def pattern_solutions(
        self, tenant: str, request: models.PatternSolutionsRequest | dict
    ) -> models.PatternSolutionsResult:
        return self._patterns.solutions(tenant, validate(models.PatternSolutionsRequest, request))

    def pattern_link(self, tenant: str, request: models.PatternLinkRequest | dict) -> models.PatternLinkResult:
        req = validate(models.PatternLinkRequest, request)
        req.solution_id = self.named_solution(tenant, req.solution_id)  # a Vector Bridge solution_id too
        return self._patterns.link(tenant, req)

    def golden_paths(
        self, tenant: str, request: models.GoldenPathsRequest | dict | None = None
    ) -> models.GoldenPathsResult:
        return self._patterns.golden_paths(tenant, validate(models.GoldenPathsRequest, request or {}))

    # ---- mining -------------------------------------------------------------

    def mine(self, tenant: str) -> models.DetectPatternsResult:
        """Cluster the tenant's failures into patterns and link what followed; idempotent."""
        return self.detect_patterns(tenant, {"min_occurrences": 2, "k": 100})

    def detect_patterns(
        self, tenant: str, request: models.DetectPatternsRequest | dict | None = None
    ) -> models.DetectPatternsResult:
        req = validate(models.DetectPatternsRequest, request or {})
        # Read a page at a time (capsule.learning.mining_pages), never the whole tenant: the latest
        # failures first, then the successes as evidence after the clusters are known. A memory
        # sealed at rest (capsule.crypto) is left out: a pattern keeps its signature terms and
        # evidence in the clear.
        options = self.mining_options
        failures = mining_pages.latest_failures(self.memories, tenant, options.max_memories)
        vectors = self._vectors(failures)
        items = mining.occurrences(failures, vectors, options.max_memories)
        applications = self.store.applications(tenant, limit=options.max_memories)
        existing = self.store.patterns(tenant, category=None, min_occurrences=0, limit=MAX_PATTERNS_SCANNED)
        clusters: list[mining.Cluster] = []
        counted = 0
        for group in mining.cluster(items, options):
            if len(group) < 2:
                continue
            found = mining.describe_cluster([items[i] for i in group])
            taken = {c.tag for c in clusters if c.category == found.category}
            same_category = {
                p.tag: set(p.examples) for p in existing if p.category == found.category and p.tag not in taken
            }
            found.tag = mining.name(found, same_category, taken)
            self._save_pattern(tenant, found, existing)
            clusters.append(found)
        if clusters:
            windows = [mining.following(c, options) for c in clusters]
            for page in mining_pages.successes(self.memories, tenant):
                following = [r for r in page if any(w(r.project, r.occurred_at) for w in windows)]
                if not following:
                    continue
                page_vectors = self._vectors(following)
                for found in clusters:
                    counted += self._record_evidence(
                        tenant, found, mining.success_evidence(found, following, page_vectors, options)
                    )
        for found in clusters:  # after the successes, as mining.evidence orders them
            counted += self._record_evidence(tenant, found, mining.own_evidence(found, applications, options))
        wanted = self.store.patterns(tenant, category=req.category, min_occurrences=req.min_occurrences, limit=req.k)
        return models.DetectPatternsResult(
            patterns=[to_pattern(p) for p in wanted],
            scanned=len(items),
            clusters=len(clusters),
            linked=counted,
            explanation=(
                f"Scanned {len(items)} failure/error memories across the tenant's projects, found "
                f"{len(clusters)} recurring cluster(s) and recorded {counted} new piece(s) of evidence of "
                f"what fixed them; {len(wanted)} pattern(s) occur at least {req.min_occurrences} times"
                + (f" in category '{req.category}'." if req.category else ".")
            ),
        )

    def _vectors(self, records: Sequence[MemoryRecord]) -> dict[str, np.ndarray]:
        """Each memory's vector under the current model; missing ones are embedded now (not stored)."""
        model = self.embedder.model_id
        vectors = {r.id: r.embedding for r in records if r.embedding is not None and r.model == model}
        missing = [r for r in records if r.id not in vectors and (mining.is_failure(r) or mining.is_success(r))]
        fresh = self._embed([r.content for r in missing])
        if fresh is not None:
            vectors.update({r.id: fresh[i] for i, r in enumerate(missing)})
        return vectors

    def _save_pattern(self, tenant: str, found: mining.Cluster, existing: Sequence[PatternRecord]) -> None:
        now = self.clock()
        created = next((p.created_at for p in existing if p.tag == found.tag and p.category == found.category), now)
        records = [m.record for m in found.members]
        self.store.upsert_pattern(
            PatternRecord(
                tenant=tenant,
                tag=found.tag,
                category=found.category,
                terms=found.terms,
                occurrences=len(records),
                projects=sorted({r.project for r in records}),
                examples=[r.id for r in records[:50]],
                description=records[0].content[:500],
                created_at=created,
                updated_at=now,
                first_seen=min(r.occurred_at for r in records),
                last_seen=max(r.occurred_at for r in records),
                embedding=found.centroid,
                model=None if found.centroid is None else self.embedder.model_id,
            )
        )

    def _record_evidence(self, tenant: str, found: mining.Cluster, evidence: Sequence[mining.Evidence]) -> int:
        counted = 0
        for item in evidence:
            if item.kind == "solution":
                try:
                    self.store.get_solution(tenant, item.target_id)
                except NotFound:
                    continue  # a memory named a solution this tenant does not have
            _, new = self.store.link(
                tenant,
                found.tag,
                found.category,
                item.kind,
                item.target_id,
                success=item.success,
                at=self.clock(),
                evidence=item.key,
            )
            counted += int(new)
        return counted
