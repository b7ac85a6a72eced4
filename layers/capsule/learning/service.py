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
from typing import Any, Callable, Sequence

import numpy as np

from .. import limits
from ..clock import Clock, system_clock
from ..embedders.base import Embedder
from ..errors import InvalidInput, NotFound, Unavailable
from ..ranking import wilson_lower_bound
from ..records import Filters, MemoryRecord
from ..service import decode_cursor, encode_cursor, validate
from ..store.base import MemoryStore
from ..store.learning import LearningStore
from . import mining, models
from .records import ApplicationRecord, LinkRecord, PatternRecord, SolutionRecord
from .safe_regex import cached
from .signature import terms

MAX_SEARCH_SOLUTIONS = 5000
MAX_PATTERNS_SCANNED = 1000
SEARCH_EMBED_BUDGET = 64  # solutions a search may embed (the rest wait for the backfill job)
DEFAULT_MIN_SIMILARITY = 0.35
# solution_search: score = regex + meaning + keyword + track record
SOLUTION_WEIGHTS = {"regex": 0.45, "vector": 0.35, "keyword": 0.10, "success": 0.10}
# pattern_detect: score = meaning + shared signature terms
PATTERN_WEIGHTS = {"vector": 0.6, "terms": 0.4}


def _rate(success: int, failure: int) -> float:
    return round(wilson_lower_bound(success, success + failure), 6)


def to_solution(record: SolutionRecord) -> models.Solution:
    # Counts written before they saturated may exceed the model's bound: read them at the bound.
    success, failure = (min(max(n, 0), limits.MAX_COUNT) for n in (record.success, record.failure))
    return models.Solution(
        **record.body, id=record.id, success_count=success, failure_count=failure,
        success_rate=_rate(success, failure), created_at=record.created_at,
        updated_at=record.updated_at,
    )


def to_pattern(record: PatternRecord) -> models.Pattern:
    return models.Pattern(
        tag=record.tag, category=record.category, terms=record.terms, occurrences=record.occurrences,
        projects=record.projects, examples=record.examples, description=record.description,
        first_seen=record.first_seen, last_seen=record.last_seen,
    )


def _linked_solution(link: LinkRecord, solution: SolutionRecord) -> models.LinkedSolution:
    rate = _rate(link.success, link.failure)
    return models.LinkedSolution(
        id=solution.id, title=solution.title, category=solution.category, success=link.success,
        failure=link.failure, success_rate=rate,
        explanation=(f"worked {link.success} of {link.success + link.failure} times for pattern '{link.tag}'"
                     f" (Wilson lower bound {rate:.2f})"),
    )


def _linked_fix(link: LinkRecord, memory: MemoryRecord) -> models.LinkedFix:
    rate = _rate(link.success, link.failure)
    return models.LinkedFix(
        memory_id=memory.id, project=memory.project, content=memory.content[:500], success=link.success,
        failure=link.failure, success_rate=rate,
        explanation=(f"recorded as a success in project '{memory.project}' after this error"
                     f" ({link.success} success(es) for pattern '{link.tag}', Wilson lower bound {rate:.2f})"),
    )


def _split_extra(body: Any) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(body, dict):
        raise InvalidInput("a fixpack is a JSON object", field="body")
    ignored = sorted(k for k in body if k not in models.FIXPACK_FIELDS)
    return {k: v for k, v in body.items() if k in models.FIXPACK_FIELDS}, ignored


def _regex_match(signatures: Sequence[dict[str, Any]], error: str) -> str | None:
    """The reason the first matching regex gives, or None."""
    for number, signature in enumerate(signatures, start=1):
        for pattern in signature.get("regexes", []):
            try:
                regex = cached(pattern)
            except InvalidInput:  # stored before a stricter check: never run it
                continue
            if regex.search(error):
                return f"regex /{pattern}/ of signature {number} matched"
    return None


def _shared_terms(signatures: Sequence[dict[str, Any]], error_terms: set[str]) -> tuple[float, set[str]]:
    """The largest share of one signature's terms found in the error, and those terms."""
    best, shared = 0.0, set()
    for signature in signatures:
        sig_terms = set(terms(signature["text"]))
        if sig_terms and len(sig_terms & error_terms) / len(sig_terms) > best:
            shared = sig_terms & error_terms
            best = len(shared) / len(sig_terms)
    return best, shared


class LearningService:
    def __init__(
        self,
        store: LearningStore,
        memories: MemoryStore,
        embedder: Embedder,
        *,
        clock: Clock = system_clock,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        mining_options: mining.MiningOptions = mining.MiningOptions(),
        search_embed_budget: int = SEARCH_EMBED_BUDGET,
    ) -> None:
        self.store = store
        self.memories = memories
        self.embedder = embedder
        self.clock = clock
        self._new_id = new_id
        self.mining_options = mining_options
        self.search_embed_budget = search_embed_budget

    # ---- helpers ------------------------------------------------------------

    def _embed(self, texts: Sequence[str], kind: str = "document") -> np.ndarray | None:
        if not texts:
            return None
        try:
            return self.embedder.embed(list(texts), kind=kind)
        except Unavailable:
            return None  # signatures are embedded later, on the first search that can

    def _record(self, tenant: str, fixpack: models.Fixpack, solution_id: str | None = None) -> SolutionRecord:
        now = self.clock()
        body = fixpack.model_dump(mode="json", exclude={"success_count", "failure_count"})
        vectors = self._embed([s.text for s in fixpack.signatures])
        return SolutionRecord(
            id=solution_id or self._new_id(), tenant=tenant, title=fixpack.title, category=fixpack.category,
            body=body, created_at=now, updated_at=now, success=fixpack.success_count,
            failure=fixpack.failure_count, embeddings=vectors,
            model=None if vectors is None else self.embedder.model_id,
        )

    # ---- solutions: create, read, update, delete, import ---------------------

    def create_solution(self, tenant: str, body: models.Fixpack | dict) -> models.SolutionResult:
        fixpack = validate(models.Fixpack, body)
        record = self._record(tenant, fixpack)
        self.store.insert_solution(record)
        return models.SolutionResult(
            solution=to_solution(record),
            explanation=(f"Created solution {record.id} '{record.title}' ({record.category}) with "
                         f"{len(fixpack.signatures)} signature(s), {len(fixpack.steps)} step(s) and "
                         f"{len(fixpack.checks)} check(s).") + self._embedding_note(record),
        )

    def _embedding_note(self, record: SolutionRecord) -> str:
        if record.embeddings is None:
            return " The embedder is unavailable: its signatures match by regex and keyword until a search embeds them."
        return ""

    def get_solution(self, tenant: str, solution_id: str) -> models.SolutionResult:
        record = self.store.get_solution(tenant, solution_id)
        return models.SolutionResult(
            solution=to_solution(record),
            explanation=f"Solution {solution_id}: applied {record.success + record.failure} times, "
                        f"{record.success} successfully.",
        )

    def list_solutions(self, tenant: str, request: models.ListSolutionsRequest | dict | None = None
                       ) -> models.SolutionList:
        req = validate(models.ListSolutionsRequest, request or {})
        after = decode_cursor(req.cursor) if req.cursor else None
        rows = self.store.list_solutions(tenant, category=req.category, after=after, limit=req.limit + 1)
        page, more = rows[: req.limit], len(rows) > req.limit
        scope = f" in category '{req.category}'" if req.category else ""
        return models.SolutionList(
            solutions=[to_solution(r) for r in page], next_cursor=encode_cursor(page[-1]) if more else None,
            explanation=f"{len(page)} solution(s){scope}, newest first" + ("; more follow the cursor." if more else "."),
        )

    def update_solution(self, tenant: str, solution_id: str, body: models.Fixpack | dict) -> models.SolutionResult:
        fixpack = validate(models.Fixpack, body)
        current = self.store.get_solution(tenant, solution_id)
        record = self._record(tenant, fixpack, solution_id)
        record.created_at, record.success, record.failure = current.created_at, current.success, current.failure
        self.store.replace_solution(record)
        return models.SolutionResult(
            solution=to_solution(record),
            explanation=(f"Replaced solution {solution_id}. Its success and failure counts "
                         f"({current.success}/{current.failure}) are kept: only solution_apply changes them.")
            + self._embedding_note(record),
        )

    def delete_solution(self, tenant: str, solution_id: str) -> models.DeleteResult:
        self.store.delete_solution(tenant, solution_id)
        return models.DeleteResult(
            id=solution_id, deleted=True,
            explanation=f"Deleted solution {solution_id}, its applications and its links to patterns.",
        )

    def import_solution(self, tenant: str, body: Any, *, source: str | None = None) -> models.ImportResult:
        """Import one fixpack file as it is. Unknown top-level fields are ignored (and named);
        a fixpack with the title and category of an existing solution replaces it, so
        importing the same file twice changes nothing."""
        known, ignored = _split_extra(body)
        fixpack = validate(models.Fixpack, known)
        existing = self.store.find_solution(tenant, fixpack.title, fixpack.category)
        origin = f" from {source}" if source else ""
        skipped = f" Ignored unknown field(s): {', '.join(ignored)}." if ignored else ""
        if existing is None:
            record = self._record(tenant, fixpack)
            self.store.insert_solution(record)
            return models.ImportResult(
                solution=to_solution(record), created=True, ignored_fields=ignored,
                explanation=f"Imported '{record.title}'{origin} as new solution {record.id}.{skipped}"
                + self._embedding_note(record),
            )
        record = self._record(tenant, fixpack, existing.id)
        record.created_at, record.success, record.failure = existing.created_at, existing.success, existing.failure
        self.store.replace_solution(record)
        return models.ImportResult(
            solution=to_solution(record), created=False, ignored_fields=ignored,
            explanation=(f"Solution {existing.id} already had the title '{record.title}' in category "
                         f"'{record.category}': replaced its content{origin}, kept its counts.{skipped}"),
        )

    # ---- solution_search and solution_apply ---------------------------------

    def _stale(self, record: SolutionRecord) -> bool:
        return record.embeddings is None or record.model != self.embedder.model_id

    def embed_solutions(self, records: Sequence[SolutionRecord], *, limit: int) -> int:
        """Embed the signatures of up to ``limit`` solutions that have none under the current
        model (the embedder was down, or has changed), in one call; updates ``records`` in place.
        Raises Unavailable when the embedder is down."""
        stale = [r for r in records if self._stale(r)][:limit]
        texts = [s["text"] for r in stale for s in r.body["signatures"]]
        if not texts:
            return 0
        vectors = self.embedder.embed(texts)
        start = 0
        for record in stale:
            count = len(record.body["signatures"])
            record.embeddings, record.model = vectors[start:start + count], self.embedder.model_id
            self.store.set_solution_embeddings(record.tenant, record.id, record.embeddings, record.model)
            start += count
        return len(stale)

    def _closest(self, record: SolutionRecord, query: np.ndarray | None) -> tuple[float, int | None, float]:
        """(similarity, index, threshold) of the signature closest in meaning to the error."""
        vectors = None if query is None or self._stale(record) else record.embeddings
        if vectors is None:
            return 0.0, None, DEFAULT_MIN_SIMILARITY
        sims = np.clip(vectors @ query, 0.0, 1.0)
        best = int(np.argmax(sims))
        threshold = record.body["signatures"][best].get("meta", {}).get("min_score") or DEFAULT_MIN_SIMILARITY
        return float(sims[best]), best, threshold

    def _match(self, record: SolutionRecord, error: str, error_terms: set[str], query: np.ndarray | None
               ) -> models.SolutionMatch | None:
        signatures = record.body["signatures"]
        regex_reason = _regex_match(signatures, error)
        reasons = [regex_reason] if regex_reason else []
        vector, best, threshold = self._closest(record, query)
        if best is not None and vector >= threshold:
            reasons.append(f"means nearly the same as signature {best + 1} "
                           f"'{signatures[best]['text'][:80]}' (similarity {vector:.2f} >= {threshold:.2f})")
        keyword, shared = _shared_terms(signatures, error_terms)
        if keyword >= 0.5:
            reasons.append(f"shares the signature terms {', '.join(sorted(shared))}")
        if not reasons:
            return None
        applied = record.success + record.failure
        success = wilson_lower_bound(record.success, applied)
        if applied:
            reasons.append(f"worked {record.success} of {applied} times (Wilson {success:.2f})")
        regex = 1.0 if regex_reason else 0.0
        w = SOLUTION_WEIGHTS
        score = w["regex"] * regex + w["vector"] * vector + w["keyword"] * keyword + w["success"] * success
        return models.SolutionMatch(
            solution=to_solution(record), score=round(score, 6),
            components=models.MatchComponents(regex=regex, vector=round(vector, 6), keyword=round(keyword, 6),
                                              success=round(success, 6)),
            reasons=reasons, explanation="; ".join(reasons),
        )

    def solution_search(self, tenant: str, request: models.SolutionSearchRequest | dict
                        ) -> models.SolutionSearchResult:
        req = validate(models.SolutionSearchRequest, request)
        records = self.store.solutions(tenant, category=req.category, limit=MAX_SEARCH_SOLUTIONS)
        query = self._embed([req.error], kind="query")
        if query is not None:
            try:  # a few at a time here; the backfill job embeds the rest
                self.embed_solutions(records, limit=self.search_embed_budget)
            except Unavailable:
                query = None
        error_terms = set(terms(req.error))
        vector = None if query is None else query[0]
        matches = [m for r in records if (m := self._match(r, req.error, error_terms, vector))]
        matches.sort(key=lambda m: (-m.score, m.solution.id))
        top = matches[: req.k]
        text = f"Checked {len(records)} solution(s); {len(matches)} matched."
        if top:
            text += f" The best, '{top[0].solution.title}', {top[0].explanation}."
        if query is None:
            text += " The embedder is unavailable: matched by regex and signature terms only."
        return models.SolutionSearchResult(results=top, explanation=text)

    def solution_apply(self, tenant: str, solution_id: str, request: models.ApplyRequest | dict
                       ) -> models.ApplyResult:
        req = validate(models.ApplyRequest, request)
        application = ApplicationRecord(
            id=self._new_id(), tenant=tenant, solution_id=solution_id, success=req.success, at=self.clock(),
            project=req.project, error=req.error, context=req.context,
        )
        record = self.store.record_application(application)
        outcome = "success" if req.success else "failure"
        text = (f"Recorded a {outcome} for solution {solution_id}: {record.success} success(es), "
                f"{record.failure} failure(s), success rate (Wilson) {_rate(record.success, record.failure):.2f}.")
        pattern = None
        if req.pattern is not None:
            found, created = self._pattern_or_new(tenant, req.pattern.tag, req.pattern.category)
            self.store.link(tenant, found.tag, found.category, "solution", solution_id, success=req.success,
                            at=application.at, evidence=f"application:{application.id}")
            pattern = to_pattern(found)
            text += f" Also counted for pattern '{found.tag}'" + (" (created)." if created else ".")
        return models.ApplyResult(solution=to_solution(record), pattern=pattern, explanation=text)

    # ---- patterns -----------------------------------------------------------

    def _pattern_or_new(self, tenant: str, tag: str, category: str) -> tuple[PatternRecord, bool]:
        try:
            return self.store.get_pattern(tenant, tag, category), False
        except NotFound:
            now = self.clock()
            record = PatternRecord(
                tenant=tenant, tag=tag, category=category, terms=terms(tag) or [tag.lower()], occurrences=0,
                projects=[], examples=[], description=f"Created by a link to pattern '{tag}'.",
                created_at=now, updated_at=now,
            )
            self.store.upsert_pattern(record)
            return record, True

    def _linked(self, tenant: str, links: Sequence[LinkRecord], k: int
                ) -> tuple[list[models.LinkedSolution], list[models.LinkedFix]]:
        ranked = sorted(links, key=lambda l: (-_rate(l.success, l.failure), -l.success, l.target_id))
        solutions: list[models.LinkedSolution] = []
        fixes: list[models.LinkedFix] = []
        for link in ranked:
            try:
                if link.kind == "solution" and len(solutions) < k:
                    solutions.append(_linked_solution(link, self.store.get_solution(tenant, link.target_id)))
                elif link.kind == "memory" and len(fixes) < k and link.success:
                    fixes.append(_linked_fix(link, self.memories.get(tenant, link.target_id)))
            except NotFound:
                continue  # deleted or forgotten since it was linked
        return solutions, fixes

    def pattern_detect(self, tenant: str, request: models.PatternDetectRequest | dict) -> models.PatternDetectResult:
        req = validate(models.PatternDetectRequest, request)
        patterns = self.store.patterns(tenant, category=req.category, min_occurrences=0, limit=MAX_PATTERNS_SCANNED)
        query = self._embed([req.error], kind="query")
        error_terms = set(terms(req.error))
        scored = []
        for p in patterns:
            vector = 0.0
            if query is not None and p.embedding is not None and p.model == self.embedder.model_id:
                vector = max(0.0, float(p.embedding @ query[0]))
            matched = sorted(set(p.terms) & error_terms)
            share = len(matched) / len(p.terms) if p.terms else 0.0
            score = PATTERN_WEIGHTS["vector"] * vector + PATTERN_WEIGHTS["terms"] * share
            if score >= req.min_score:
                scored.append((score, vector, share, matched, p))
        scored.sort(key=lambda s: (-s[0], -s[4].occurrences, s[4].tag))
        results = []
        for score, vector, share, matched, p in scored[: req.k]:
            links = self.store.links(tenant, tag=p.tag, category=p.category)
            solutions, fixes = self._linked(tenant, links, req.solutions)
            why = [f"similar in meaning ({vector:.2f})"] if vector else []
            if matched:
                why.append(f"shares the terms {', '.join(matched)}")
            why.append(f"seen {p.occurrences} time(s) in {len(p.projects)} project(s)")
            results.append(models.PatternMatch(
                pattern=to_pattern(p), score=round(score, 6),
                components=models.PatternComponents(vector=round(vector, 6), terms=round(share, 6)),
                matched_terms=matched, solutions=solutions, fixes=fixes, explanation="; ".join(why),
            ))
        text = f"Compared the error with {len(patterns)} known pattern(s); {len(scored)} scored at least {req.min_score}."
        if results:
            text += f" The best is '{results[0].pattern.tag}': {results[0].explanation}."
        if query is None:
            text += " The embedder is unavailable: matched by signature terms only."
        return models.PatternDetectResult(results=results, explanation=text)

    def pattern_solutions(self, tenant: str, request: models.PatternSolutionsRequest | dict
                          ) -> models.PatternSolutionsResult:
        req = validate(models.PatternSolutionsRequest, request)
        pattern = self.store.get_pattern(tenant, req.tag, req.category)
        links = self.store.links(tenant, tag=req.tag, category=req.category)
        solutions, fixes = self._linked(tenant, links, req.k)
        text = f"{len(solutions)} solution(s) and {len(fixes)} fix(es) linked to pattern '{req.tag}'"
        text += ", ranked by how often each worked for this pattern (Wilson lower bound)."
        return models.PatternSolutionsResult(pattern=to_pattern(pattern), solutions=solutions, fixes=fixes,
                                             explanation=text)

    def pattern_link(self, tenant: str, request: models.PatternLinkRequest | dict) -> models.PatternLinkResult:
        req = validate(models.PatternLinkRequest, request)
        solution = self.store.get_solution(tenant, req.solution_id)
        pattern, created = self._pattern_or_new(tenant, req.tag, req.category)
        link, _ = self.store.link(tenant, req.tag, req.category, "solution", solution.id, success=req.success,
                                  at=self.clock(), evidence=None)
        verdict = "worked" if req.success else "failed"
        text = (f"Recorded that solution {solution.id} {verdict} for pattern '{req.tag}': now "
                f"{link.success} success(es), {link.failure} failure(s).")
        if created:
            text += " The pattern did not exist yet; it was created with no occurrences."
        return models.PatternLinkResult(pattern=to_pattern(pattern), link=_linked_solution(link, solution),
                                        pattern_created=created, explanation=text)

    def golden_paths(self, tenant: str, request: models.GoldenPathsRequest | dict | None = None
                     ) -> models.GoldenPathsResult:
        req = validate(models.GoldenPathsRequest, request or {})
        links = self.store.links(tenant, category=req.category, min_success=req.min_applications, limit=10 * req.k)
        links = sorted(links, key=lambda l: (-_rate(l.success, l.failure), -l.success, l.tag, l.target_id))
        paths: list[models.GoldenPath] = []
        for link in links:
            if len(paths) >= req.k:
                break
            try:
                path = self._golden(tenant, link)
            except NotFound:
                continue
            paths.append(path)
        return models.GoldenPathsResult(
            paths=paths,
            explanation=(f"{len(paths)} pattern-fix pair(s) that worked at least {req.min_applications} time(s),"
                         " best success rate (Wilson lower bound) first."),
        )

    def _golden(self, tenant: str, link: LinkRecord) -> models.GoldenPath:
        pattern = to_pattern(self.store.get_pattern(tenant, link.tag, link.category))
        rate = _rate(link.success, link.failure)
        if link.kind == "solution":
            solution = _linked_solution(link, self.store.get_solution(tenant, link.target_id))
            what, fix = f"solution '{solution.title}'", None
        else:
            solution, fix = None, _linked_fix(link, self.memories.get(tenant, link.target_id))
            what = f"the fix in memory {link.target_id}"
        return models.GoldenPath(
            pattern=pattern, solution=solution, fix=fix, success=link.success, failure=link.failure,
            success_rate=rate,
            explanation=(f"{what} fixed pattern '{link.tag}' {link.success} of {link.success + link.failure} "
                         f"time(s) (Wilson lower bound {rate:.2f})"),
        )

    # ---- mining -------------------------------------------------------------

    def mine(self, tenant: str) -> models.DetectPatternsResult:
        """Cluster the tenant's failures into patterns and link what followed; idempotent."""
        return self.detect_patterns(tenant, {"min_occurrences": 2, "k": 100})

    def detect_patterns(self, tenant: str, request: models.DetectPatternsRequest | dict | None = None
                        ) -> models.DetectPatternsResult:
        req = validate(models.DetectPatternsRequest, request or {})
        records = self.memories.candidates(tenant, None, Filters())
        options = self.mining_options
        vectors = self._vectors(records)
        items = mining.occurrences(records, vectors, options.max_memories)
        successes = [r for r in records if mining.is_success(r)]
        applications = self.store.applications(tenant, limit=options.max_memories)
        existing = self.store.patterns(tenant, category=None, min_occurrences=0, limit=MAX_PATTERNS_SCANNED)
        clusters: list[mining.Cluster] = []
        counted = 0
        for group in mining.cluster(items, options):
            if len(group) < 2:
                continue
            found = mining.describe_cluster([items[i] for i in group])
            taken = {c.tag for c in clusters}
            same_category = {p.tag: set(p.examples) for p in existing
                             if p.category == found.category and p.tag not in taken}
            found.tag = mining.name(found, same_category)
            self._save_pattern(tenant, found, existing)
            counted += self._record_evidence(tenant, found, mining.evidence(found, successes, applications, vectors,
                                                                             options))
            clusters.append(found)
        wanted = self.store.patterns(tenant, category=req.category, min_occurrences=req.min_occurrences,
                                     limit=req.k)
        return models.DetectPatternsResult(
            patterns=[to_pattern(p) for p in wanted], scanned=len(items), clusters=len(clusters), linked=counted,
            explanation=(f"Scanned {len(items)} failure/error memories across the tenant's projects, found "
                         f"{len(clusters)} recurring cluster(s) and recorded {counted} new piece(s) of evidence of "
                         f"what fixed them; {len(wanted)} pattern(s) occur at least {req.min_occurrences} times"
                         + (f" in category '{req.category}'." if req.category else ".")),
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
        self.store.upsert_pattern(PatternRecord(
            tenant=tenant, tag=found.tag, category=found.category, terms=found.terms,
            occurrences=len(records), projects=sorted({r.project for r in records}),
            examples=[r.id for r in records[:50]], description=records[0].content[:500],
            created_at=created, updated_at=now, first_seen=min(r.occurred_at for r in records),
            last_seen=max(r.occurred_at for r in records), embedding=found.centroid,
            model=None if found.centroid is None else self.embedder.model_id,
        ))

    def _record_evidence(self, tenant: str, found: mining.Cluster, evidence: Sequence[mining.Evidence]) -> int:
        counted = 0
        for item in evidence:
            if item.kind == "solution":
                try:
                    self.store.get_solution(tenant, item.target_id)
                except NotFound:
                    continue  # a memory named a solution this tenant does not have
            _, new = self.store.link(tenant, found.tag, found.category, item.kind, item.target_id,
                                     success=item.success, at=self.clock(), evidence=item.key)
            counted += int(new)
        return counted
