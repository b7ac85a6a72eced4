"""What the memory tools return: the service's result models, bounded, plus a short text.

Each ``*_output`` function takes a result from the backend and returns the structured
result (a model below, published as the tool's output schema) and the text an agent reads.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from capsule import models

from .bounded import ECHO_CHARS, EXCERPT_CHARS, excerpt, fit, size


class Bounded(BaseModel):
    omitted: int = Field(0, description="Items left out to stay within max_chars.")
    truncated: list[str] = Field(default_factory=list, description="Ids whose content was cut to an excerpt.")


class SearchOutput(models.SearchResult, Bounded):
    pass


class ListOutput(models.ListResult, Bounded):
    pass


class ProjectsOutput(models.ProjectsResult, Bounded):
    pass


class IngestOutput(models.IngestResult):
    ids_omitted: int = Field(0, description="Chunk ids left out of 'ids' to keep the result small.")


def _short_memory(memory: models.Memory, limit: int = ECHO_CHARS) -> models.Memory:
    content, _ = excerpt(memory.content, limit)
    return memory.model_copy(update={"content": content})


def _one_line(text: str, limit: int) -> str:
    return excerpt(" ".join(text.split()), limit)[0]


def search_output(result: models.SearchResult, max_chars: int) -> tuple[SearchOutput, str]:
    cut: list[str] = []
    hits = []
    for hit in result.results:
        content, was_cut = excerpt(hit.content, EXCERPT_CHARS)
        if was_cut:
            cut.append(hit.id)
        hits.append(hit.model_copy(update={"content": content}))
    kept, omitted = fit(hits, max_chars, size)
    out = SearchOutput(results=kept, explanation=result.explanation, omitted=omitted,
                       truncated=[i for i in cut if any(h.id == i for h in kept)])
    lines = [f"{n}. [{h.score:.2f}] {h.id}" + (f" ({h.path})" if h.path else "")
             + (" pinned" if h.pinned else "") + f"\n   {_one_line(h.content, 400)}"
             for n, h in enumerate(kept, start=1)]
    if omitted:
        lines.append(f"({omitted} more left out to stay within max_chars; lower k or raise max_chars)")
    lines.append(result.explanation)
    return out, "\n".join(lines) if kept else "No memories matched. " + result.explanation


def list_output(result: models.ListResult, max_chars: int) -> tuple[ListOutput, str]:
    cut: list[str] = []
    memories = []
    for memory in result.memories:
        content, was_cut = excerpt(memory.content, EXCERPT_CHARS)
        if was_cut:
            cut.append(memory.id)
        memories.append(memory.model_copy(update={"content": content}))
    kept, omitted = fit(memories, max_chars, size)
    out = ListOutput(memories=kept, next_cursor=result.next_cursor, explanation=result.explanation,
                     omitted=omitted, truncated=[i for i in cut if any(m.id == i for m in kept)])
    lines = [f"- {m.id} {m.created_at:%Y-%m-%d %H:%M}" + (" pinned" if m.pinned else "")
             + f": {_one_line(m.content, 300)}" for m in kept]
    lines.append(result.explanation)
    if result.next_cursor:
        lines.append(f"More: call memory_list with cursor={result.next_cursor}")
    return out, "\n".join(lines)


def store_output(result: models.StoreResult) -> tuple[models.StoreResult, str]:
    out = result.model_copy(update={"memory": _short_memory(result.memory)})
    return out, f"id {result.memory.id}. {result.explanation}"


def ingest_output(result: models.IngestResult, max_ids: int = 50) -> tuple[IngestOutput, str]:
    out = IngestOutput(**{**result.model_dump(), "ids": result.ids[:max_ids]},
                       ids_omitted=max(len(result.ids) - max_ids, 0))
    return out, result.explanation


def memory_output(result: models.MemoryResult) -> tuple[models.MemoryResult, str]:
    out = result.model_copy(update={"memory": _short_memory(result.memory)})
    return out, result.explanation


def projects_output(result: models.ProjectsResult, max_chars: int) -> tuple[ProjectsOutput, str]:
    kept, omitted = fit(result.projects, max_chars, size)
    out = ProjectsOutput(projects=kept, explanation=result.explanation, omitted=omitted)
    lines = [f"- {p.project}: {p.memories} memories ({p.pinned} pinned), limit {p.retention_limit}"
             + (f", last activity {p.last_activity:%Y-%m-%d}" if p.last_activity else "") for p in kept]
    if omitted:
        lines.append(f"({omitted} more projects left out; raise max_chars)")
    lines.append(result.explanation)
    return out, "\n".join(lines)


__all__ = ["SearchOutput", "ListOutput", "ProjectsOutput", "IngestOutput", "search_output", "list_output",
           "store_output", "ingest_output", "memory_output", "projects_output"]
