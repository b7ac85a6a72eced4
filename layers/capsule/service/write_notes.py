"""What a store or an ingest says it did beyond storing: the memories the retention limit
evicted (and why those), a project left over its limit, an embedding left for the backfill
job, the embedder a project's first write used, and the retention class a memory got."""

from __future__ import annotations

from ..core import models
from ..core.records import MemoryRecord, WriteOutcome
from ..core.retention import effective_class, eviction_reason
from ..embedders.base import Embedder
from ..embedders.base import describe as describe_embedder


def retention_note(outcome: WriteOutcome) -> tuple[list[models.Eviction], str]:
    """The memories evicted by the write, each with its reason, and the sentence saying so."""

    def reason(memory_id: str) -> str:
        return eviction_reason(outcome.limit, outcome.evicted_classes.get(memory_id, "replaceable"))

    evicted = [models.Eviction(id=i, reason=reason(i)) for i in outcome.evicted]
    note = ""
    if evicted:
        note = f" Evicted {len(evicted)} ({', '.join(outcome.evicted)}): {reason(outcome.evicted[0])}."
    if outcome.active_after > outcome.limit:
        note += (
            f" The project is over its limit ({outcome.active_after} of {outcome.limit}): every older"
            " memory is pinned, irreplaceable, permanent or part of this write, so nothing more could be evicted."
        )
    return evicted, note


def pending_note(embed_error: str | None) -> str:
    if embed_error is None:
        return ""
    return (
        f" No embedding could be made ({embed_error}); it is found by keyword now and the backfill job will embed it."
    )


def embedder_note(outcome: WriteOutcome, embedder: Embedder) -> str:
    """A project's first write says which embedder makes its vectors, and why that one."""
    before = outcome.active_after - len(outcome.inserted) + len(outcome.evicted)
    if not outcome.inserted or before > 0:
        return ""
    return f" Embedder: {describe_embedder(embedder).sentence()}."


def class_note(record: MemoryRecord) -> str:
    klass = effective_class(record.retention, record.pinned)
    if klass == "ephemeral" and record.expires_at is not None:
        return f"; class ephemeral: it expires at {record.expires_at.isoformat()}"
    return f"; class {klass}" if klass != "replaceable" else ""
