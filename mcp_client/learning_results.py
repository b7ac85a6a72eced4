"""What the learning tools return: the learning service's results, bounded, plus a short text."""

from __future__ import annotations

from collections.abc import Sequence

from capsule.learning import models as lm

from .bounded import EXCERPT_CHARS, excerpt, fit, size
from .tool_results import Bounded


class SolutionSearchOutput(lm.SolutionSearchResult, Bounded):
    pass


class PatternDetectOutput(lm.PatternDetectResult, Bounded):
    pass


class PatternSolutionsOutput(lm.PatternSolutionsResult, Bounded):
    pass


class GoldenPathsOutput(lm.GoldenPathsResult, Bounded):
    pass


class DetectPatternsOutput(lm.DetectPatternsResult, Bounded):
    pass


def _fixes(fixes: Sequence[lm.LinkedFix]) -> list[lm.LinkedFix]:
    """A linked fix carries a memory's content: cut it to an excerpt."""
    return [f.model_copy(update={"content": excerpt(f.content, EXCERPT_CHARS)[0]}) if f.content else f for f in fixes]


def _rate(success: int, failure: int, rate: float) -> str:
    return f"worked {success}/{success + failure} (rate {rate:.2f})"


def _steps(solution: lm.Solution, limit: int = 5) -> list[str]:
    lines = []
    for step in sorted(solution.steps, key=lambda s: s.step_order)[:limit]:
        what = step.summary()
        lines.append(f"   {step.step_order}. {step.kind}: {excerpt(' '.join(str(what).split()), 160)[0]}")
    if len(solution.steps) > limit:
        lines.append(f"   ... {len(solution.steps) - limit} more step(s) in the structured result")
    return lines


def _omitted(omitted: int, what: str) -> list[str]:
    return [f"({omitted} more {what} left out to stay within max_chars)"] if omitted else []


def solution_search_output(result: lm.SolutionSearchResult, max_chars: int) -> tuple[SolutionSearchOutput, str]:
    kept, omitted = fit(result.results, max_chars, size)
    lines = []
    for n, match in enumerate(kept, start=1):
        s = match.solution
        lines.append(
            f"{n}. [{match.score:.2f}] {s.title} (id {s.id}, {s.category}); "
            f"{_rate(s.success_count, s.failure_count, s.success_rate)}; {match.explanation}"
        )
        lines += _steps(s)
    lines += _omitted(omitted, "solution(s)")
    lines.append(result.explanation)
    if kept:
        lines.append("After trying one, call solution_apply with its id and whether it worked.")
    return SolutionSearchOutput(results=kept, explanation=result.explanation, omitted=omitted), "\n".join(lines)


def apply_output(result: lm.ApplyResult) -> tuple[lm.ApplyResult, str]:
    return result, result.explanation


def _pattern_line(match: lm.PatternMatch) -> list[str]:
    p = match.pattern
    lines = [
        f"- [{match.score:.2f}] pattern '{p.tag}' ({p.category}), seen {p.occurrences} time(s): {match.explanation}"
    ]
    lines += [
        f"   solution {s.title} (id {s.id}): {_rate(s.success, s.failure, s.success_rate)}" for s in match.solutions
    ]
    lines += [
        f"   fix in memory {f.memory_id}: {_rate(f.success, f.failure, f.success_rate)}"
        + (f": {excerpt(' '.join(f.content.split()), 200)[0]}" if f.content else "")
        for f in match.fixes
    ]
    return lines


def pattern_detect_output(result: lm.PatternDetectResult, max_chars: int) -> tuple[PatternDetectOutput, str]:
    matches = [m.model_copy(update={"fixes": _fixes(m.fixes)}) for m in result.results]
    kept, omitted = fit(matches, max_chars, size)
    lines = [line for m in kept for line in _pattern_line(m)] + _omitted(omitted, "pattern(s)")
    lines.append(result.explanation)
    return PatternDetectOutput(results=kept, explanation=result.explanation, omitted=omitted), "\n".join(lines)


def pattern_solutions_output(result: lm.PatternSolutionsResult, max_chars: int) -> tuple[PatternSolutionsOutput, str]:
    solutions, dropped = fit(result.solutions, max_chars // 2, size)
    fixes, dropped_fixes = fit(_fixes(result.fixes), max_chars // 2, size)
    omitted = dropped + dropped_fixes
    lines = [f"Pattern '{result.pattern.tag}' ({result.pattern.category}), seen {result.pattern.occurrences} time(s)."]
    lines += [f"- solution {s.title} (id {s.id}): {_rate(s.success, s.failure, s.success_rate)}" for s in solutions]
    lines += [f"- fix in memory {f.memory_id}: {_rate(f.success, f.failure, f.success_rate)}" for f in fixes]
    lines += _omitted(omitted, "item(s)") + [result.explanation]
    out = PatternSolutionsOutput(
        pattern=result.pattern, solutions=solutions, fixes=fixes, explanation=result.explanation, omitted=omitted
    )
    return out, "\n".join(lines)


def pattern_link_output(result: lm.PatternLinkResult) -> tuple[lm.PatternLinkResult, str]:
    return result, result.explanation


def golden_paths_output(result: lm.GoldenPathsResult, max_chars: int) -> tuple[GoldenPathsOutput, str]:
    paths = [p.model_copy(update={"fix": _fixes([p.fix])[0]}) if p.fix else p for p in result.paths]
    kept, omitted = fit(paths, max_chars, size)
    lines = [
        f"- {p.pattern.tag} ({p.pattern.category}) -> "
        + (
            f"solution {p.solution.title} (id {p.solution.id})"
            if p.solution
            else f"fix in memory {p.fix.memory_id}"
            if p.fix
            else "?"
        )
        + f": {_rate(p.success, p.failure, p.success_rate)}"
        for p in kept
    ]
    lines += _omitted(omitted, "path(s)") + [result.explanation]
    return GoldenPathsOutput(paths=kept, explanation=result.explanation, omitted=omitted), "\n".join(lines)


def detect_patterns_output(result: lm.DetectPatternsResult, max_chars: int) -> tuple[DetectPatternsOutput, str]:
    patterns = [
        p.model_copy(update={"description": excerpt(p.description, 300)[0], "examples": p.examples[:10]})
        for p in result.patterns
    ]
    kept, omitted = fit(patterns, max_chars, size)
    lines = [
        f"- '{p.tag}' ({p.category}): {p.occurrences} occurrence(s) in {len(p.projects)} project(s); "
        f"terms {', '.join(p.terms[:6])}"
        for p in kept
    ]
    lines += _omitted(omitted, "pattern(s)") + [result.explanation]
    out = DetectPatternsOutput(
        patterns=kept,
        scanned=result.scanned,
        clusters=result.clusters,
        linked=result.linked,
        explanation=result.explanation,
        omitted=omitted,
    )
    return out, "\n".join(lines)


__all__ = [
    "solution_search_output",
    "apply_output",
    "pattern_detect_output",
    "pattern_solutions_output",
    "pattern_link_output",
    "golden_paths_output",
    "detect_patterns_output",
]
