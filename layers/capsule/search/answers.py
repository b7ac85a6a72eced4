"""A search's answer as the query cache keeps it: what was ranked, not the models built from it.

A cached result used to be copied twice (:func:`capsule.search.querycache.fresh`): when kept and when
given out. Most searches are never asked again, so the copy when kept was a tenth of a search's
work for nothing. An :class:`Answer` holds only what the models are made of (the scored hits,
their records, the explanation, the chains of what each hit superseded), none of which changes
once made (an index replaces a changed record, never edits it), so it is kept as it is and each
caller, the first included, gets models built for it alone (:func:`search_result`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core import models
from ..core.retention import effective_class
from .construct import built
from .hybrid import Scored
from .querycache import fresh


@dataclass(frozen=True, slots=True)
class Answer:
    hits: tuple[Scored, ...]
    explanation: str
    # What each hit superseded, newest first (include_superseded), else empty.
    chains: tuple[tuple[models.SupersededMemory, ...], ...] = ()


def search_result(answer: Answer) -> models.SearchResult:
    """The answer's models, sharing nothing a caller could change with the answer."""
    results = [hit_model(h) for h in answer.hits]
    for hit, chain in zip(results, answer.chains):
        hit.superseded = [fresh(m) for m in chain]
    return built(models.SearchResult, {"results": results, "explanation": answer.explanation})


def hit_model(hit: Scored) -> models.SearchHit:
    # Built without validation: every field comes from a stored, already validated memory
    # and the scorer's floats, and validating ten hits cost a tenth of a small search. The
    # meta is copied: the record is the index's own.
    r = hit.record
    chunk = built(models.Chunk, {"index": r.chunk_index, "of": r.chunk_count}) if r.chunk_index is not None else None
    components = built(
        models.Components,
        {
            "vector": round(hit.vector, 6),
            "bm25": round(hit.bm25, 6),
            "time": round(hit.time, 6),
            "feedback": round(hit.feedback, 6),
            "outcome": round(hit.outcome, 6),
            "boost": round(hit.boost, 6),
        },
    )
    return built(
        models.SearchHit,
        {  # every field, in the model's order
            "id": r.id,
            "project": r.project,
            "path": r.path,
            "chunk": chunk,
            "content": r.content,
            "score": round(hit.score, 6),
            "components": components,
            "pinned": r.pinned,
            "meta": fresh(r.meta),
            "occurred_at": r.occurred_at,
            "created_at": r.created_at,
            "retention": effective_class(r.retention, r.pinned),
            "visibility": r.visibility or "private",
            "subject": r.subject,
            "supersedes": r.supersedes,
            "superseded": [],
        },
    )


def superseded_note(ids: Sequence[tuple[str, str | None]], walk: bool) -> str:
    """What the explanation says of the hits (id, what it superseded) that replaced others."""
    notes = [f"{hit} superseded {old}" for hit, old in ids if old is not None]
    if not notes:
        return ""
    return (
        " Newer memories replace older ones: "
        + "; ".join(notes)
        + (" (each hit lists what it superseded)." if walk else " (include_superseded shows the older ones).")
    )
