"""What the memory tools return: the service's result models, bounded, plus a short text.

Each ``*_output`` function takes a result from the backend and returns the structured
result (a model below, published as the tool's output schema) and the text an agent reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from capsule.core import models

from .bounded import ECHO_CHARS, EXCERPT_CHARS, HIT_EXCERPT_CHARS, excerpt, fit, size


class Bounded(BaseModel):
    omitted: int = Field(0, description="Items left out to stay within max_chars.")
    truncated: list[str] = Field(default_factory=list, description="Ids whose content was cut to an excerpt.")


class SearchOutput(Bounded):
    """Each hit once: an excerpt and its id (memory_get reads it whole), each score signal once, and of
    the hit's other fields only those that say something (a default is left out)."""

    results: list[dict[str, Any]]
    explanation: str


class ListOutput(models.ListResult, Bounded):
    pass


class ProjectsOutput(models.ProjectsResult, Bounded):
    pass


class IngestOutput(models.IngestResult):
    ids_omitted: int = Field(0, description="Chunk ids left out of 'ids' to keep the result small.")


class GetOutput(models.MemoryResult):
    offset: int = Field(description="Where this page of the content starts, in characters.")
    next_offset: int | None = Field(None, description="Pass as offset to read on; null at the end.")
    total_chars: int = Field(description="The whole content's length, in characters.")


M = TypeVar("M", bound=models.Memory)


def _short_memory(memory: models.Memory, limit: int = ECHO_CHARS) -> models.Memory:
    content, _ = excerpt(memory.content, limit)
    return memory.model_copy(update={"content": content})


def _one_line(text: str, limit: int) -> str:
    return excerpt(" ".join(text.split()), limit)[0]


def _shortened(items: Sequence[M], max_chars: int) -> tuple[list[M], int, list[str]]:
    """Each item's content cut to an excerpt, then as many items as fit in ``max_chars``:
    (kept, how many were left out, ids of kept items whose content was cut)."""
    cut: set[str] = set()
    short = []
    for item in items:
        content, was_cut = excerpt(item.content, EXCERPT_CHARS)
        if was_cut:
            cut.add(item.id)
        short.append(item.model_copy(update={"content": content}))
    kept, omitted = fit(short, max_chars, size)
    return kept, omitted, [item.id for item in kept if item.id in cut]


# A hit's fields left out where they hold their default (most hits): every listed one is paid for.
HIT_DEFAULTS = {
    "pinned": False,
    "retention": "replaceable",
    "visibility": "private",
    "subject": None,
    "supersedes": None,
    "superseded": [],
    "chunk": None,
    "path": None,
}


def _output_hit(hit: models.SearchHit, every_project: bool) -> dict[str, Any]:
    out = hit.model_dump(mode="json", exclude={"created_at"})
    out["content"], _ = excerpt(hit.content, HIT_EXCERPT_CHARS)
    out["score"] = round(hit.score, 4)
    out["components"] = {name: round(value, 3) for name, value in out["components"].items()}  # every signal
    out["meta"] = {
        k: v for k, v in out["meta"].items() if v not in ([], None) and (k, v) != ("outcome_status", "unknown")
    }
    if not every_project:
        del out["project"]  # the one asked for
    return {k: v for k, v in out.items() if not (k in HIT_DEFAULTS and v == HIT_DEFAULTS[k])}


def search_output(result: models.SearchResult, max_chars: int, every_project: bool = False) -> tuple[SearchOutput, str]:
    hits = [_output_hit(h, every_project) for h in result.results]
    kept, omitted = fit(hits, max_chars, size)
    truncated = [h["id"] for h, full in zip(kept, result.results) if len(full.content) > HIT_EXCERPT_CHARS]
    out = SearchOutput(results=kept, explanation=result.explanation, omitted=omitted, truncated=truncated)
    lines = [
        f"{n}. [{h['score']:.2f}] {h['id']}"
        + (f" ({h['path']})" if h.get("path") else "")
        + (" pinned" if h.get("pinned") else "")
        + f"\n   {_one_line(h['content'], HIT_EXCERPT_CHARS)}"
        for n, h in enumerate(kept, start=1)
    ]
    if omitted:
        lines.append(f"({omitted} more left out to stay within max_chars; lower k or raise max_chars)")
    if truncated:
        lines.append("Excerpts: memory_get reads a memory whole.")
    lines.append(result.explanation)
    return out, "\n".join(lines) if kept else "No memories matched. " + result.explanation


def list_output(result: models.ListResult, max_chars: int) -> tuple[ListOutput, str]:
    kept, omitted, truncated = _shortened(result.memories, max_chars)
    out = ListOutput(
        memories=kept,
        next_cursor=result.next_cursor,
        explanation=result.explanation,
        omitted=omitted,
        truncated=truncated,
    )
    lines = [
        f"- {m.id} {m.created_at:%Y-%m-%d %H:%M}" + (" pinned" if m.pinned else "") + f": {_one_line(m.content, 300)}"
        for m in kept
    ]
    lines.append(result.explanation)
    if result.next_cursor:
        lines.append(f"More: call memory_list with cursor={result.next_cursor}")
    return out, "\n".join(lines)


def store_output(result: models.StoreResult) -> tuple[models.StoreResult, str]:
    out = result.model_copy(update={"memory": _short_memory(result.memory)})
    return out, f"id {result.memory.id}. {result.explanation}"


def ingest_output(result: models.IngestResult, max_ids: int = 50) -> tuple[IngestOutput, str]:
    out = IngestOutput(
        **{**result.model_dump(), "ids": result.ids[:max_ids]}, ids_omitted=max(len(result.ids) - max_ids, 0)
    )
    return out, result.explanation


def get_output(result: models.MemoryResult, offset: int, max_chars: int) -> tuple[GetOutput, str]:
    """One page of the memory's whole content: ``max_chars`` characters from ``offset``."""
    content = result.memory.content
    page = content[offset : offset + max_chars]
    end = offset + len(page)
    more = end < len(content)
    out = GetOutput(
        memory=result.memory.model_copy(update={"content": page}),
        explanation=result.explanation,
        offset=offset,
        next_offset=end if more else None,
        total_chars=len(content),
    )
    where = f"characters {offset}-{end} of {len(content)}"
    tail = f"({where}; call memory_get with offset={end} for the rest)" if more else f"({where}, the end)"
    return out, f"{page}\n\n{tail}" if page else f"Nothing at offset {offset}: {tail}"


def memory_output(result: models.MemoryResult) -> tuple[models.MemoryResult, str]:
    out = result.model_copy(update={"memory": _short_memory(result.memory)})
    return out, result.explanation


def projects_output(result: models.ProjectsResult, max_chars: int) -> tuple[ProjectsOutput, str]:
    kept, omitted = fit(result.projects, max_chars, size)
    out = ProjectsOutput(projects=kept, explanation=result.explanation, omitted=omitted)
    lines = [
        f"- {p.project}: {p.memories} memories ({p.pinned} pinned), limit {p.retention_limit}"
        + (f", last activity {p.last_activity:%Y-%m-%d}" if p.last_activity else "")
        for p in kept
    ]
    if omitted:
        lines.append(f"({omitted} more projects left out; raise max_chars)")
    lines.append(result.explanation)
    return out, "\n".join(lines)


__all__ = [
    "SearchOutput",
    "ListOutput",
    "ProjectsOutput",
    "IngestOutput",
    "search_output",
    "list_output",
    "store_output",
    "ingest_output",
    "GetOutput",
    "get_output",
    "memory_output",
    "projects_output",
]
