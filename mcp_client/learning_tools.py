"""The learning tools: solutions (fixpacks) for errors, error patterns, golden paths, mining."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from capsule.core import limits
from capsule.learning import models as lm

from . import learning_results as out
from . import vb_markdown
from .strict_tools import ToolRegistry
from .tool_kit import MaxChars, Project, drop_none, result, run, state

ErrorText = Annotated[
    str, Field(min_length=1, max_length=limits.MAX_QUERY_CHARS, description="The error or log lines, verbatim.")
]
Category = Annotated[str | None, Field(min_length=1, max_length=128, description="Only this category.")]
Tag = Annotated[str, Field(min_length=1, max_length=128, description="The pattern's tag, from pattern_detect.")]
PatternCategory = Annotated[str, Field(min_length=1, max_length=128, description="The pattern's category.")]
SolutionId = Annotated[str, Field(min_length=1, max_length=128, description="A solution id from solution_search.")]
Context_ = Annotated[
    str | None, Field(max_length=limits.MAX_CONTEXT_CHARS, description="What you were doing, briefly.")
]
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
RECORD = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


def register(tools: ToolRegistry) -> None:
    @tools.tool(annotations=READ)
    def solution_search(
        error: ErrorText,
        ctx: Context,
        category: Category = None,
        component: Annotated[
            str | None,
            Field(min_length=1, max_length=128, description=("Only solutions for this component (or for none).")),
        ] = None,
        k: Annotated[int, Field(ge=1, le=limits.MAX_K, description="How many solutions at most.")] = 3,
        max_chars: MaxChars = None,
    ) -> Annotated[CallToolResult, out.SolutionSearchOutput]:
        """Find known fixes (solutions: ordered steps and checks) for an error, as soon as a build, test or
        command fails. Report the outcome with solution_apply."""
        s = state(ctx)
        found = run(
            lambda: s.backend.solution_search(drop_none(error=error, category=category, component=component, k=k))
        )
        return result(*out.solution_search_output(found, s.budget(max_chars)))

    @tools.tool(annotations=RECORD)
    def solution_apply(
        solution_id: SolutionId,
        success: Annotated[bool, Field(description="true if applying the solution fixed the error.")],
        ctx: Context,
        error: Annotated[
            str | None, Field(max_length=limits.MAX_QUERY_CHARS, description="The error it was applied to.")
        ] = None,
        context: Context_ = None,
        pattern_tag: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=128,
                description=("Also count the outcome for this error pattern (a tag from pattern_detect)."),
            ),
        ] = None,
        pattern_category: PatternCategory = "general",
        project: Project = None,
    ) -> Annotated[CallToolResult, lm.ApplyResult]:
        """Record whether a solution worked, once per attempt: this is what ranks solutions."""
        s = state(ctx)
        request = drop_none(success=success, error=error, context=context, project=s.project(project))
        if pattern_tag:
            request["pattern"] = {"tag": pattern_tag, "category": pattern_category}
        return result(*out.apply_output(run(lambda: s.backend.solution_apply(solution_id, request))))

    @tools.tool(annotations=READ)
    def pattern_detect(
        error: ErrorText,
        ctx: Context,
        category: Category = None,
        k: Annotated[int, Field(ge=1, le=limits.MAX_K, description="How many patterns at most.")] = 3,
        min_score: Annotated[float, Field(ge=0, le=1, description="Leave out weaker matches.")] = 0.15,
        solutions: Annotated[int, Field(ge=0, le=10, description="Linked solutions per pattern.")] = 3,
        max_chars: MaxChars = None,
    ) -> Annotated[CallToolResult, out.PatternDetectOutput]:
        """Tell whether an error is a known recurring pattern across sessions and projects, and what fixed it."""
        s = state(ctx)
        request = drop_none(error=error, category=category, k=k, min_score=min_score, solutions=solutions)
        return result(*out.pattern_detect_output(run(lambda: s.backend.pattern_detect(request)), s.budget(max_chars)))

    @tools.tool(annotations=READ)
    def pattern_solutions(
        tag: Tag,
        ctx: Context,
        category: Annotated[
            str | None,
            Field(min_length=1, max_length=128, description=("The pattern's category (default: every one).")),
        ] = None,
        k: Annotated[int, Field(ge=1, le=limits.MAX_K)] = 5,
        max_chars: MaxChars = None,
    ) -> Annotated[CallToolResult, out.PatternSolutionsOutput]:
        """Everything known to fix one error pattern (its tag), most successful first."""
        s = state(ctx)
        found = run(lambda: s.backend.pattern_solutions(drop_none(tag=tag, category=category, k=k)))
        return result(*out.pattern_solutions_output(found, s.budget(max_chars)))

    @tools.tool(annotations=RECORD)
    def pattern_link(
        tag: Tag,
        solution_id: SolutionId,
        success: Annotated[bool, Field(description="true if the solution fixed this pattern's error.")],
        ctx: Context,
        category: PatternCategory = "general",
        context: Context_ = None,
    ) -> Annotated[CallToolResult, lm.PatternLinkResult]:
        """Record that a solution fixed (or failed to fix) an error pattern, so it is offered first next time."""
        s = state(ctx)
        request = drop_none(tag=tag, category=category, solution_id=solution_id, success=success, context=context)
        return result(*out.pattern_link_output(run(lambda: s.backend.pattern_link(request))))

    @tools.tool(annotations=READ)
    def golden_paths(
        ctx: Context,
        category: Category = None,
        min_applications: Annotated[
            int, Field(ge=1, le=1_000_000, description="Successes a pattern-fix pair needs.")
        ] = 3,
        k: Annotated[int, Field(ge=1, le=limits.MAX_PAGE)] = 20,
        max_chars: MaxChars = None,
    ) -> Annotated[CallToolResult, out.GoldenPathsOutput]:
        """The proven playbook: pattern -> fix pairs that worked repeatedly, best first."""
        s = state(ctx)
        request = drop_none(category=category, min_applications=min_applications, k=k)
        output, _ = out.golden_paths_output(run(lambda: s.backend.golden_paths(request)), s.budget(max_chars))
        # The text is the Vector Bridge's Markdown (its callers send {} and read it); programs read ours.
        return result(output, vb_markdown.golden_paths(output.paths, min_applications))

    @tools.tool(
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        )
    )
    def detect_patterns(
        ctx: Context,
        category: Category = None,
        min_occurrences: Annotated[
            int, Field(ge=2, le=1_000_000, description="How often an error must recur to count.")
        ] = 2,
        k: Annotated[int, Field(ge=1, le=limits.MAX_PAGE)] = 20,
        max_chars: MaxChars = None,
    ) -> Annotated[CallToolResult, out.DetectPatternsOutput]:
        """Mine stored error memories for recurring errors now (a job also does), linking each to its fix."""
        s = state(ctx)
        request = drop_none(category=category, min_occurrences=min_occurrences, k=k)
        return result(*out.detect_patterns_output(run(lambda: s.backend.detect_patterns(request)), s.budget(max_chars)))


__all__ = ["register"]
