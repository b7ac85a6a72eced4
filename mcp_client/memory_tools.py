"""The memory tools: store, ingest, search, list, get, pin, forget, restore, feedback, projects."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from capsule.core import limits, models

from . import tool_results as out
from .bounded import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, MIN_MAX_CHARS, size
from .governance_tools import RetentionArg, TtlArg
from .strict_tools import ToolRegistry
from .tool_kit import MaxChars, MemoryId, Meta, Project, Tags, drop_none, merged_meta, result, run, state
from .vb_dialect import projects_json

Outcome = Literal["success", "failure", "unknown"]
Kind = Annotated[
    str | None,
    Field(max_length=64, description="What kind of memory: decision, fix, error, code, note, convention, ..."),
]
Component = Annotated[str | None, Field(max_length=128, description="The part of the system, e.g. 'backend'.")]
Category = Annotated[str | None, Field(max_length=128, description="A category, e.g. 'code', 'decision', 'deploy'.")]
OutcomeArg = Annotated[Outcome | None, Field(description="Did it work? success ranks higher, failure lower.")]
ClassFilter = Annotated[models.EffectiveClass | None, Field(description="Only memories of this retention class.")]
VisibilityArg = Annotated[models.Visibility | None, Field(description=models.VISIBILITY_DESCRIPTION)]
VisibilityFilter = Annotated[models.Visibility | None, Field(description="Only memories of this visibility.")]
SubjectArg = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=256,
        pattern=models.NO_CONTROL,
        description=("The person or end-user the memory is about."),
    ),
]
SubjectFilter = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=256,
        pattern=models.NO_CONTROL,
        description=("Only memories about this person or end-user."),
    ),
]
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def register(tools: ToolRegistry) -> None:
    @tools.tool(annotations=WRITE)
    def memory_store(
        content: Annotated[
            str,
            Field(
                min_length=1,
                max_length=limits.MAX_CONTENT_BYTES,
                description="Self-contained: what was decided or learned, and why.",
            ),
        ],
        ctx: Context,
        project: Project = None,
        type: Kind = None,
        tags: Tags = None,
        outcome: OutcomeArg = None,
        explanation: Annotated[
            str | None, Field(max_length=limits.MAX_EXPLANATION_CHARS, description="Why this is worth remembering.")
        ] = None,
        path: Annotated[
            str | None, Field(max_length=limits.MAX_PATH_CHARS, description="The file it is about, if any.")
        ] = None,
        component: Component = None,
        category: Category = None,
        pinned: Annotated[bool, Field(description="Pin it so the rolling limit never evicts it.")] = False,
        meta: Meta = None,
        retention: RetentionArg = None,
        ttl: TtlArg = None,
        supersedes: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=128,
                description=(
                    "The id of an older memory this one replaces because the fact changed; search then returns this "
                    "one."
                ),
            ),
        ] = None,
        visibility: VisibilityArg = None,
        subject: SubjectArg = None,
    ) -> Annotated[CallToolResult, models.StoreResult]:
        """Remember one thing later sessions need: a decision and why, a fix that worked, a convention, a
        pitfall. Returns its id and anything the project's limit evicted."""
        s = state(ctx)
        # tags go as the request's own field: beside meta.tags, the API's one rule (both, no tag twice) holds.
        fields = merged_meta(meta, type=type, outcome_status=outcome, component=component, category=category)
        stored = run(
            lambda: s.backend.store(
                drop_none(
                    project=s.project(project),
                    content=content,
                    explanation=explanation,
                    path=path,
                    pinned=pinned,
                    meta={"source": "mcp", **fields},
                    tags=tags,
                    retention=retention,
                    ttl=ttl,
                    supersedes=supersedes,
                    visibility=visibility,
                    subject=subject,
                )
            )
        )
        return result(*out.store_output(stored))

    @tools.tool(annotations=WRITE)
    def memory_ingest(
        text: Annotated[str, Field(min_length=1, max_length=limits.MAX_INGEST_BYTES)],
        ctx: Context,
        project: Project = None,
        path: Annotated[
            str | None, Field(max_length=limits.MAX_PATH_CHARS, description="The file it came from.")
        ] = None,
        type: Kind = None,
        tags: Tags = None,
        outcome: OutcomeArg = None,
        component: Component = None,
        category: Category = None,
        meta: Meta = None,
    ) -> Annotated[CallToolResult, out.IngestOutput]:
        """Store a long text (a document, a file) as searchable chunks; memory_store is for one fact. Returns
        the chunk ids."""
        s = state(ctx)
        fields = merged_meta(meta, type=type, outcome_status=outcome, component=component, category=category)
        ingested = run(
            lambda: s.backend.ingest(
                drop_none(project=s.project(project), text=text, path=path, meta={"source": "mcp", **fields}, tags=tags)
            )
        )
        return result(*out.ingest_output(ingested))

    @tools.tool(annotations=READ)
    def memory_search(
        query: Annotated[
            str,
            Field(min_length=1, max_length=limits.MAX_QUERY_CHARS, description="Words, keywords or an error message."),
        ],
        ctx: Context,
        project: Project = None,
        all_projects: Annotated[bool, Field(description="Search every project instead of one.")] = False,
        k: Annotated[int, Field(ge=1, le=limits.MAX_K, description="How many results at most.")] = 5,
        mode: Annotated[
            Literal["hybrid", "vector", "bm25"],
            Field(description="hybrid: meaning and keywords (best default); vector: meaning only; bm25: exact words."),
        ] = "hybrid",
        tags: Tags = None,
        component: Component = None,
        category: Category = None,
        path_prefix: Annotated[
            str | None,
            Field(max_length=limits.MAX_PATH_CHARS, description="Only memories about files under this path."),
        ] = None,
        max_chars: MaxChars = None,
        as_of: Annotated[
            str | None,
            Field(
                max_length=64,
                description=(
                    'ISO 8601 date-time to search as of (default now): recency and "last month", "a week ago" '
                    "in the query are read from it."
                ),
            ),
        ] = None,
        min_relevance: Annotated[
            float | None,
            Field(
                ge=0, le=1, description=("Least meaning or keyword score a hit needs (0-1; default: the service's).")
            ),
        ] = None,
        retention: ClassFilter = None,
        include_superseded: Annotated[
            bool, Field(description=("Also list, on each hit, the older memories it superseded."))
        ] = False,
        visibility: VisibilityFilter = None,
        subject: SubjectFilter = None,
    ) -> Annotated[CallToolResult, out.SearchOutput]:
        """Recall past decisions and fixes by meaning and keyword, before a task or on an error. Returns hits
        (id, score, excerpt; memory_get reads one whole); give memory_feedback on those that helped."""
        s = state(ctx)
        request = {
            "query": query,
            "k": k,
            "mode": mode,
            "global": all_projects,
            "filters": drop_none(
                tags=tags,
                component=component,
                category=category,
                path_prefix=path_prefix,
                retention=retention,
                visibility=visibility,
                subject=subject,
            ),
            **drop_none(as_of=as_of, min_relevance=min_relevance, include_superseded=include_superseded),
        }
        if not all_projects:
            request["project"] = s.project(project)
        found = run(lambda: s.backend.search(request))
        return result(*out.search_output(found, s.budget(max_chars), every_project=all_projects))

    @tools.tool(annotations=READ)
    def memory_list(
        ctx: Context,
        project: Project = None,
        pinned_only: Annotated[bool, Field(description="Only pinned memories.")] = False,
        limit: Annotated[int, Field(ge=1, le=50, description="Page size.")] = 10,
        cursor: Annotated[str | None, Field(max_length=512, description="next_cursor from the previous page.")] = None,
        max_chars: MaxChars = None,
        retention: ClassFilter = None,
        visibility: VisibilityFilter = None,
        subject: SubjectFilter = None,
    ) -> Annotated[CallToolResult, out.ListOutput]:
        """Browse a project's memories, newest first, a page at a time (next_cursor); not ranked."""
        s = state(ctx)
        request = drop_none(
            project=s.project(project),
            pinned_only=pinned_only,
            limit=limit,
            cursor=cursor,
            retention=retention,
            visibility=visibility,
            subject=subject,
        )
        listed = run(lambda: s.backend.list_memories(request))
        output, text = out.list_output(listed, s.budget(max_chars))
        if output.omitted:
            # Ask again for just what fits, so next_cursor continues right after the last one shown.
            listed = run(lambda: s.backend.list_memories({**request, "limit": len(output.memories)}))
            output, text = out.list_output(listed, max(s.budget(max_chars), size(output)))
        return result(output, text)

    @tools.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True))
    def memory_pin(
        id: MemoryId,
        ctx: Context,
        action: Annotated[
            Literal["pin", "unpin"],
            Field(description="pin: never evicted by the project's rolling limit; unpin: may be evicted again."),
        ] = "pin",
    ) -> Annotated[CallToolResult, models.MemoryResult]:
        """Pin a memory that must survive the rolling limit (a key decision), or unpin it."""
        s = state(ctx)
        return result(*out.memory_output(run(lambda: s.backend.pin(id, action == "pin"))))

    @tools.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True))
    def memory_forget(
        id: MemoryId,
        ctx: Context,
        reason: Annotated[
            str | None,
            Field(max_length=limits.MAX_EXPLANATION_CHARS, description="Why: wrong, outdated, superseded by ..."),
        ] = None,
        force: Annotated[bool, Field(description="Needed to forget an irreplaceable memory.")] = False,
    ) -> Annotated[CallToolResult, models.MemoryResult]:
        """Forget a wrong or outdated memory (memory_restore brings it back within 30 days)."""
        s = state(ctx)
        return result(*out.memory_output(run(lambda: s.backend.forget(id, reason, force))))

    @tools.tool(annotations=READ)
    def memory_get(
        id: MemoryId,
        ctx: Context,
        offset: Annotated[
            int,
            Field(
                ge=0,
                le=limits.MAX_INGEST_BYTES,
                description="Start at this character (next_offset of the previous page).",
            ),
        ] = 0,
        max_chars: Annotated[
            int | None,
            Field(
                ge=MIN_MAX_CHARS,
                le=MAX_MAX_CHARS,
                description=(f"Characters of content per page (default {DEFAULT_MAX_CHARS})."),
            ),
        ] = None,
    ) -> Annotated[CallToolResult, out.GetOutput]:
        """Read one memory whole; a long one a page at a time (call again with offset=next_offset)."""
        s = state(ctx)
        found = run(lambda: s.backend.get(id))
        return result(*out.get_output(found, offset, s.budget(max_chars)))

    @tools.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True))
    def memory_restore(id: MemoryId, ctx: Context) -> Annotated[CallToolResult, models.RestoreResult]:
        """Bring back a memory forgotten in the last 30 days."""
        s = state(ctx)
        return result(*out.memory_output(run(lambda: s.backend.restore(id))))

    @tools.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False))
    def memory_feedback(
        id: MemoryId,
        helpful: Annotated[bool, Field(description="true if the memory helped with the task, false if it misled.")],
        ctx: Context,
        context: Annotated[
            str | None, Field(max_length=limits.MAX_CONTEXT_CHARS, description="What you were doing, briefly.")
        ] = None,
    ) -> Annotated[CallToolResult, models.MemoryResult]:
        """Say whether a memory from memory_search helped (it then ranks higher) or misled (lower)."""
        s = state(ctx)
        request = {"helpful": helpful, **drop_none(context=context)}
        return result(*out.memory_output(run(lambda: s.backend.feedback(id, request))))

    @tools.tool(annotations=READ)
    def memory_projects(ctx: Context, max_chars: MaxChars = None) -> Annotated[CallToolResult, out.ProjectsOutput]:
        """List the projects (root path, label, counts), most recently active first."""
        s = state(ctx)
        output, _ = out.projects_output(run(s.backend.projects), s.budget(max_chars))
        # The text is the Vector Bridge's answer (its callers send {} and read it); programs read ours.
        return result(output, projects_json(output.projects))


__all__ = ["register"]
