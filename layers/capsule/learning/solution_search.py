"""``solution_search``: the solutions whose signatures name an error, best first.

Reads the tenant's solutions (bounded), embeds the error once (without its timestamps, ids and
stack frames, :func:`.signature.salient_text`) and the signatures that have no vector under the
current model (a few per search; the backfill job embeds the rest), then scores each solution
with :mod:`.matching`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.errors import Unavailable
from ..core.learning_records import SolutionRecord
from ..embedders.base import Embedder
from ..search.ranking import wilson_lower_bound
from ..store.learning import LearningStore
from . import matching, models
from .signature import salient_text
from .views import to_solution

MAX_SEARCH_SOLUTIONS = 5000


def embed_error(embedder: Embedder, text: str) -> np.ndarray | None:
    """The error's vector, embedded without its incidental parts; None when the embedder is down."""
    try:
        return embedder.embed([salient_text(text)], kind="query")[0]
    except Unavailable:
        return None


def _rank(match: models.SolutionMatch) -> tuple:
    # Best score first; of equal scores, the one verified most recently (never verified last).
    verified = match.solution.verified_on
    return (-match.score, verified is None, -(verified.timestamp() if verified else 0.0), match.solution.id)


class SolutionSearch:
    def __init__(self, store: LearningStore, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder

    def stale(self, record: SolutionRecord) -> bool:
        return record.embeddings is None or record.model != self.embedder.model_id

    def embed_solutions(self, records: Sequence[SolutionRecord], *, limit: int) -> int:
        """Embed the signatures of up to ``limit`` solutions that have none under the current
        model (the embedder was down, or has changed), in one call; updates ``records`` in place.
        Raises Unavailable when the embedder is down."""
        stale = [r for r in records if self.stale(r)][:limit]
        texts = [s["text"] for r in stale for s in r.body["signatures"]]
        if not texts:
            return 0
        vectors = self.embedder.embed(texts)
        start = 0
        for record in stale:
            count = len(record.body["signatures"])
            record.embeddings, record.model = vectors[start : start + count], self.embedder.model_id
            self.store.set_solution_embeddings(record.tenant, record.id, record.embeddings, record.model)
            start += count
        return len(stale)

    def _match(self, record: SolutionRecord, error: matching.ErrorText) -> models.SolutionMatch | None:
        vectors = None if self.stale(record) else record.embeddings
        found = matching.match(
            record.body["signatures"], vectors, error, matching.meaning_threshold(self.embedder.model_id)
        )
        if found is None:
            return None
        applied = record.success + record.failure
        success = wilson_lower_bound(record.success, applied)
        if applied:
            found.reasons.append(f"worked {record.success} of {applied} times (Wilson {success:.2f})")
        if not found.meaning and found.regex and error.vector is not None:
            found.reasons.append("matched by regex without the same meaning: ranked below matches by meaning")
        return models.SolutionMatch(
            solution=to_solution(record),
            score=round(matching.score(found, success), 6),
            components=models.MatchComponents(
                regex=found.regex,
                vector=round(found.vector, 6),
                keyword=round(found.keyword, 6),
                success=round(success, 6),
            ),
            reasons=found.reasons,
            explanation="; ".join(found.reasons),
        )

    def search(
        self, tenant: str, req: models.SolutionSearchRequest, *, embed_budget: int
    ) -> models.SolutionSearchResult:
        records = self.store.solutions(
            tenant, category=req.category, limit=MAX_SEARCH_SOLUTIONS, component=req.component
        )
        query = embed_error(self.embedder, req.error)
        if query is not None:
            try:  # a few at a time here; the backfill job embeds the rest
                self.embed_solutions(records, limit=embed_budget)
            except Unavailable:
                query = None
        error = matching.ErrorText.of(req.error, query)
        matches = [m for r in records if (m := self._match(r, error))]
        matches.sort(key=_rank)
        top = matches[: req.k]
        scope = f" for component '{req.component}' (or none named)" if req.component else ""
        text = f"Checked {len(records)} solution(s){scope}; {len(matches)} matched."
        if top:
            text += f" The best, '{top[0].solution.title}', {top[0].explanation}."
        if query is None:
            text += " The embedder is unavailable: matched by regex and signature terms only."
        return models.SolutionSearchResult(results=top, explanation=text)
