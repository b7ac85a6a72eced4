"""Error patterns: ``pattern_detect``, ``pattern_solutions``, ``pattern_link`` and ``golden_paths``.

A pattern is a recurring error: mined from the tenant's failures (:mod:`.mining`), or made by
``pattern_link`` / ``solution_apply`` naming a tag, in which case its terms and vector come
from its tag and its linked solutions (:func:`.pattern_match.linked_profile`). Each link
counts how often a solution (or a fix memory) worked for the pattern.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core.clock import Clock
from ..core.errors import NotFound
from ..core.learning_records import LinkRecord, PatternRecord, SolutionRecord
from ..embedders.base import Embedder
from ..store.base import MemoryStore
from ..store.learning import LearningStore
from . import matching, models, pattern_match
from .signature import terms
from .solution_search import embed_error
from .views import linked_fix, linked_solution, rate, to_pattern

MAX_PATTERNS_SCANNED = 1000
MAX_PROFILE_SOLUTIONS = 20  # linked solutions that describe a pattern with no occurrences
PROFILE_REFRESH_BUDGET = 16  # such patterns pattern_detect may re-describe per request


def _merged(links: Sequence[LinkRecord]) -> list[LinkRecord]:
    """One link per target (solution or fix memory), its counts summed over the categories."""
    merged: dict[tuple[str, str], LinkRecord] = {}
    for link in links:
        key = (link.kind, link.target_id)
        if key not in merged:
            merged[key] = LinkRecord(
                tenant=link.tenant,
                tag=link.tag,
                category=link.category,
                kind=link.kind,
                target_id=link.target_id,
                success=0,
                failure=0,
                last_at=link.last_at,
            )
        total = merged[key]
        total.success += link.success
        total.failure += link.failure
        if link.last_at and (total.last_at is None or link.last_at > total.last_at):
            total.last_at = link.last_at
    return list(merged.values())


class Patterns:
    def __init__(
        self,
        store: LearningStore,
        memories: MemoryStore,
        embedder: Embedder,
        clock: Clock,
        stale: Callable[[SolutionRecord], bool],
    ) -> None:
        self.store = store
        self.memories = memories
        self.embedder = embedder
        self.clock = clock
        self.stale = stale  # whether a solution's vectors are missing or from another model

    def pattern_or_new(self, tenant: str, tag: str, category: str) -> tuple[PatternRecord, bool]:
        try:
            return self.store.get_pattern(tenant, tag, category), False
        except NotFound:
            now = self.clock()
            record = PatternRecord(
                tenant=tenant,
                tag=tag,
                category=category,
                terms=pattern_match.tag_words(tag) or [tag.lower()],
                occurrences=0,
                projects=[],
                examples=[],
                description=f"Created by a link to pattern '{tag}'.",
                created_at=now,
                updated_at=now,
            )
            self.store.upsert_pattern(record)
            return record, True

    def profile_linked(self, tenant: str, pattern: PatternRecord, *, only_with_vector: bool = False) -> PatternRecord:
        """A pattern with no occurrences takes its terms and vector from its tag and the
        signatures of the solutions linked to it, so pattern_detect finds it by meaning and terms.
        ``only_with_vector``: change nothing unless a vector comes of it."""
        if pattern.occurrences:
            return pattern  # mined: its members say what it is
        texts, vectors = [], []
        for link in self.store.links(tenant, tag=pattern.tag, category=pattern.category)[:MAX_PROFILE_SOLUTIONS]:
            if link.kind != "solution":
                continue
            try:
                solution = self.store.get_solution(tenant, link.target_id)
            except NotFound:
                continue
            texts += [sig["text"] for sig in solution.body["signatures"]]
            if not self.stale(solution):
                vectors += list(solution.embeddings)  # type: ignore[arg-type]  # not stale: embedded
        found_terms, vector = pattern_match.linked_profile(pattern.tag, texts, vectors)
        if vector is None and only_with_vector:
            return pattern
        pattern.terms, pattern.embedding = found_terms, vector
        pattern.description = pattern_match.linked_description(pattern.tag, texts)
        pattern.model = None if pattern.embedding is None else self.embedder.model_id
        pattern.updated_at = self.clock()
        self.store.upsert_pattern(pattern)
        return pattern

    def _linked(
        self, tenant: str, links: Sequence[LinkRecord], k: int
    ) -> tuple[list[models.LinkedSolution], list[models.LinkedFix]]:
        ranked = sorted(links, key=lambda link: (-rate(link.success, link.failure), -link.success, link.target_id))
        solutions: list[models.LinkedSolution] = []
        fixes: list[models.LinkedFix] = []
        for link in ranked:
            try:
                if link.kind == "solution" and len(solutions) < k:
                    solutions.append(linked_solution(link, self.store.get_solution(tenant, link.target_id)))
                elif link.kind == "memory" and len(fixes) < k and link.success:
                    fixes.append(linked_fix(link, self.memories.get(tenant, link.target_id)))
            except NotFound:
                continue  # deleted or forgotten since it was linked
        return solutions, fixes

    def detect(self, tenant: str, req: models.PatternDetectRequest) -> models.PatternDetectResult:
        patterns = self.store.patterns(tenant, category=req.category, min_occurrences=0, limit=MAX_PATTERNS_SCANNED)
        query = embed_error(self.embedder, req.error)
        error = pattern_match.ErrorWords.of(req.error, terms(req.error))
        threshold = matching.meaning_threshold(self.embedder.model_id)
        if query is not None:
            patterns = self._refresh_linked(tenant, patterns)
        scored = []
        for p in patterns:
            vector = 0.0
            if query is not None and p.embedding is not None and p.model == self.embedder.model_id:
                vector = max(0.0, float(p.embedding @ query))
            matched = pattern_match.term_hits(p.terms, error)
            found = pattern_match.score(
                vector, matched, p.terms, error, threshold, conflict=pattern_match.conflicts(p.description, error)
            )
            if found is not None and found[0] >= req.min_score:
                scored.append((found[0], vector, found[1], matched, p))
        scored.sort(key=lambda s: (-s[0], -s[4].occurrences, s[4].tag))
        results = [self._pattern_match(tenant, req, *item) for item in scored[: req.k]]
        text = (
            f"Compared the error with {len(patterns)} known pattern(s); {len(scored)} matched by meaning "
            f"(similarity >= {threshold:.2f}) or terms and scored at least {req.min_score}."
        )
        if results:
            text += f" The best is '{results[0].pattern.tag}': {results[0].explanation}."
        if query is None:
            text += " The embedder is unavailable: matched by signature terms only."
        return models.PatternDetectResult(results=results, explanation=text)

    def _refresh_linked(self, tenant: str, patterns: list[PatternRecord]) -> list[PatternRecord]:
        """Patterns made by links whose vector is missing or from another model take it again from
        their solutions (which the backfill job and searches re-embed), a few per request."""
        budget = PROFILE_REFRESH_BUDGET
        out = []
        for p in patterns:
            if budget and not p.occurrences and (p.embedding is None or p.model != self.embedder.model_id):
                budget -= 1
                p = self.profile_linked(tenant, p, only_with_vector=True)
            out.append(p)
        return out

    def _pattern_match(
        self,
        tenant: str,
        req: models.PatternDetectRequest,
        score: float,
        vector: float,
        share: float,
        matched: list[str],
        p: PatternRecord,
    ) -> models.PatternMatch:
        links = self.store.links(tenant, tag=p.tag, category=p.category)
        solutions, fixes = self._linked(tenant, links, req.solutions)
        why = [f"similar in meaning ({vector:.2f})"] if vector else []
        if matched:
            why.append(f"shares the terms {', '.join(matched)}")
        why.append(
            f"seen {p.occurrences} time(s) in {len(p.projects)} project(s)"
            if p.occurrences
            else "known from the solutions linked to it"
        )
        return models.PatternMatch(
            pattern=to_pattern(p),
            score=round(score, 6),
            components=models.PatternComponents(vector=round(vector, 6), terms=round(share, 6)),
            matched_terms=matched,
            solutions=solutions,
            fixes=fixes,
            explanation="; ".join(why),
        )

    def solutions(self, tenant: str, req: models.PatternSolutionsRequest) -> models.PatternSolutionsResult:
        """What is linked to the pattern ``tag`` in ``category``; without a category, in every
        category that has a pattern of that tag (the Vector Bridge's optional filter)."""
        if req.category is not None:
            pattern = self.store.get_pattern(tenant, req.tag, req.category)
            links, where = self.store.links(tenant, tag=req.tag, category=req.category), ""
        else:
            found = [
                p
                for p in self.store.patterns(tenant, category=None, min_occurrences=0, limit=MAX_PATTERNS_SCANNED)
                if p.tag == req.tag
            ]
            if not found:
                raise NotFound(f"no pattern '{req.tag}' in any category")
            pattern = found[0]  # the most frequent stands for the tag
            categories = {p.category for p in found}
            links = _merged([link for link in self.store.links(tenant, tag=req.tag) if link.category in categories])
            where = (
                f" in {len(categories)} categor{'y' if len(categories) == 1 else 'ies'} "
                f"({', '.join(sorted(categories))}; counts summed across them)"
            )
        solutions, fixes = self._linked(tenant, links, req.k)
        text = f"{len(solutions)} solution(s) and {len(fixes)} fix(es) linked to pattern '{req.tag}'{where}"
        text += ", ranked by how often each worked for this pattern (Wilson lower bound)."
        return models.PatternSolutionsResult(
            pattern=to_pattern(pattern), solutions=solutions, fixes=fixes, explanation=text
        )

    def link(self, tenant: str, req: models.PatternLinkRequest) -> models.PatternLinkResult:
        solution = self.store.get_solution(tenant, req.solution_id)
        pattern, created = self.pattern_or_new(tenant, req.tag, req.category)
        link, _ = self.store.link(
            tenant, req.tag, req.category, "solution", solution.id, success=req.success, at=self.clock(), evidence=None
        )
        pattern = self.profile_linked(tenant, pattern)
        verdict = "worked" if req.success else "failed"
        text = (
            f"Recorded that solution {solution.id} {verdict} for pattern '{req.tag}': now "
            f"{link.success} success(es), {link.failure} failure(s)."
        )
        if created:
            text += " The pattern did not exist yet; it was created with no occurrences."
        return models.PatternLinkResult(
            pattern=to_pattern(pattern), link=linked_solution(link, solution), pattern_created=created, explanation=text
        )

    def golden_paths(self, tenant: str, req: models.GoldenPathsRequest) -> models.GoldenPathsResult:
        links = self.store.links(tenant, category=req.category, min_success=req.min_applications, limit=10 * req.k)
        links = sorted(
            links, key=lambda link: (-rate(link.success, link.failure), -link.success, link.tag, link.target_id)
        )
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
            explanation=(
                f"{len(paths)} pattern-fix pair(s) that worked at least {req.min_applications} time(s),"
                " best success rate (Wilson lower bound) first."
            ),
        )

    def _golden(self, tenant: str, link: LinkRecord) -> models.GoldenPath:
        pattern = to_pattern(self.store.get_pattern(tenant, link.tag, link.category))
        worked = rate(link.success, link.failure)
        if link.kind == "solution":
            solution = linked_solution(link, self.store.get_solution(tenant, link.target_id))
            what, fix = f"solution '{solution.title}'", None
        else:
            solution, fix = None, linked_fix(link, self.memories.get(tenant, link.target_id))
            what = f"the fix in memory {link.target_id}"
        return models.GoldenPath(
            pattern=pattern,
            solution=solution,
            fix=fix,
            success=link.success,
            failure=link.failure,
            success_rate=worked,
            explanation=(
                f"{what} fixed pattern '{link.tag}' {link.success} of {link.success + link.failure} "
                f"time(s) (Wilson lower bound {worked:.2f})"
            ),
        )
