"""The Vector Bridge's Markdown answers for its solution, pattern and golden-path tools (COMPAT §1.7-§1.14).

Its callers read these texts: an error-recovery hook pulls ``solution_id=<id>`` (else
``Solution #<id>``) out of a solution_search answer to call solution_preview, so those tokens
stay exactly as the original wrote them. Pure functions of our result models.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from capsule.learning import models as lm


def pct(x: float) -> int:
    """x x 100 rounded as JavaScript's toFixed(0): halves away from zero."""
    value = x * 100
    return int(math.floor(abs(value) + 0.5)) * (1 if value >= 0 else -1)


def raw_rate(success: int, failure: int) -> float:
    """The original's success rate: successes over applications, 0 when never applied."""
    return success / (success + failure) if success + failure else 0.0


def _rate(solution: lm.Solution) -> float:
    return raw_rate(solution.success_count, solution.failure_count)


def solution_search(query: str, matches: Iterable[lm.SolutionMatch]) -> str:
    matches = list(matches)
    if not matches:
        return (
            f'No solutions found matching: "{query}"\n\n'
            "Add the fix that worked with solution_upsert, so the next agent finds it."
        )
    out = [f"Found {len(matches)} matching solutions:", ""]
    for i, match in enumerate(matches, start=1):
        s = match.solution
        out += [
            f"## {i}. {s.title} (Confidence: {pct(match.score)}%)",
            f"**Category:** {s.category}",
            f"**Success Rate:** {pct(_rate(s))}% (applied {s.success_count + s.failure_count} times)",
            "",
        ]
        if s.description:
            out += ["**Description:**", s.description, ""]
        if s.steps:
            out.append("**Remediation Steps:**")
            for step in s.steps:
                out.append(f"{step.step_order}. [{step.kind}] {step.description or 'No description'}")
                command = _command(step.payload) if step.kind == "cmd" else None
                if command:
                    out.append(f"   `{command}`")
            out.append("")
        if s.checks:
            out.append("**Validation Checks:**")
            out += [f"- `{c.cmd}` (exit code: {c.expect_exit_code})" for c in s.checks]
            out.append("")
        out += [f"**Apply this solution:** Use `solution_apply` with solution_id={s.id}", "", "---", ""]
    return "\n".join(out)


def solution_preview(s: lm.Solution) -> str:
    total = s.success_count + s.failure_count
    out = [
        f"# DRY-RUN Preview: {s.title}",
        "",
        f"**Category:** {s.category}",
        f"**Success Rate:** {pct(_rate(s))}% ({s.success_count}/{total} successful)",
        "",
    ]
    if s.description:
        out += ["**Description:**", s.description, ""]
    out += ["## Actions that would be performed:", "", "### Remediation Steps:"]
    for step in s.steps:
        out.append(f"{step.step_order}. **[{step.kind.upper()}]** {step.description or 'No description'}")
        out += [f"   {line}" for line in _step_lines(step)]
    if s.checks:
        out += ["", "### Validation Checks (would run after applying):"]
        for c in s.checks:
            out += [f"{c.check_order}. `{c.cmd}`", f"   Expected exit code: {c.expect_exit_code or 0}"]
            if c.expect_substring:
                out.append(f'   Expected output: contains "{c.expect_substring}"')
    out += [
        "",
        "---",
        f"After running these steps yourself, record the outcome with `solution_apply` using solution_id={s.id}.",
        "⚠️ DRY-RUN: nothing was executed.",
    ]
    return "\n".join(out)


def _command(payload: Mapping[str, Any]) -> Any:
    return _first(payload, "command", "run")


def _first(payload: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if payload.get(name) is not None:
            return payload[name]
    return None


def _short(value: Any) -> str:
    return f"{str(value)[:50]}..." if value is not None else "(none)"


def _step_lines(step: lm.Step) -> list[str]:
    # Both spellings of each payload field are read (the files use run, src/dst, variable), so a
    # preview shows what the file says where the original printed "undefined".
    p = step.payload
    if step.kind == "cmd":
        return [f"Command: `{_command(p)}`", f"Timeout: {step.timeout_ms}ms"]
    if step.kind == "patch":
        lines = [f"File: `{_first(p, 'file', 'path')}`"]
        if _first(p, "diff", "patch") is not None and p.get("search") is None:
            return lines + [f"Diff: {_short(_first(p, 'diff', 'patch'))}"]
        return lines + [f"Search: {_short(p.get('search'))}", f"Replace: {_short(p.get('replace'))}"]
    if step.kind == "copy":
        return [f"From: `{_first(p, 'from', 'src', 'source')}`", f"To: `{_first(p, 'to', 'dst', 'dest')}`"]
    if step.kind == "env":
        if isinstance(p.get("set"), dict):
            return [f"Variable: `{name}` Value: `{value}`" for name, value in p["set"].items()]
        return [f"Variable: `{_first(p, 'key', 'variable', 'name')}`", f"Value: `{p.get('value')}`"]
    return []


def solution_apply(solution: lm.Solution, success: bool) -> str:
    rate = pct(_rate(solution))
    if success:
        return f"✅ Success recorded for solution #{solution.id}\nNew success rate: {rate}%"
    return f"❌ Failure recorded for solution #{solution.id}\nSuccess rate: {rate}%"


def solution_created(s: lm.Solution) -> str:
    return "\n".join(
        [
            f"✅ Created solution #{s.id}: {s.title}",
            f"Category: {s.category}",
            f"Signatures: {len(s.signatures)}",
            f"Steps: {len(s.steps)}",
            f"Checks: {len(s.checks)}",
        ]
    )


def not_found(solution_id: str) -> str:
    return f"❌ Solution #{solution_id} not found"


def pattern_detect(matches: list[lm.PatternMatch]) -> str:
    if not matches:
        return "❌ No patterns detected in query text."
    out = [f"🔍 **Detected {len(matches)} Pattern(s)**", ""]
    for m in matches:
        out += [
            f"### Pattern: {m.pattern.tag} ({m.pattern.category})",
            f"- **Match Score:** {pct(m.score)}%",
            f"- **Linked Solutions:** {len(m.solutions)}",
        ]
        if m.solutions:
            top = m.solutions[0]
            out += [
                f"- **Top Solution:** #{top.id} - {top.title}",
                f"- **Success Rate:** {pct(raw_rate(top.success, top.failure))}%",
                f'- Use `pattern_solutions` with pattern_tag="{m.pattern.tag}" for every known fix',
            ]
        out.append("")
    return "\n".join(out)


def pattern_solutions(tag: str, category: str | None, result: lm.PatternSolutionsResult | None) -> str:
    if result is None or not result.solutions:
        return f'❌ No solutions found for pattern "{tag}"' + (f" ({category})" if category else "")
    out = [f"📋 **Solutions for Pattern: {tag}**", ""]
    for s in result.solutions:
        out += [
            f"### Solution #{s.id}: {s.title}",
            f"- **Category:** {s.category}",
            f"- **Success Rate (for this pattern):** {pct(raw_rate(s.success, s.failure))}% "
            f"({s.success + s.failure} applications)",
        ]
        if s.explanation:
            out.append(f"- **Description:** {s.explanation}")
        out += [f"- Preview it with `solution_preview` using solution_id={s.id}", ""]
    return "\n".join(out)


def pattern_link(tag: str, solution_id: str, success: bool) -> str:
    if success:
        return f'✅ Pattern "{tag}" successfully linked to solution #{solution_id}'
    return f'❌ Pattern "{tag}" linked to solution #{solution_id} as FAILURE (will adjust rankings)'


def golden_paths(paths: list[lm.GoldenPath], min_applications: int) -> str:
    if not paths:
        return f"❌ No golden paths found (min {min_applications} applications required)"
    out = [
        f"🏆 **Golden Paths** ({len(paths)} proven pattern-solution combinations)",
        f"_Minimum {min_applications} applications_",
        "",
    ]
    for p in paths:
        if p.solution:
            head, title = f"Solution #{p.solution.id}", p.solution.title
        else:  # ours also links a pattern to a memory that fixed it
            head, title = f"Memory {p.fix.memory_id if p.fix else '?'}", (p.fix.content or "")[:80] if p.fix else ""
        out += [
            f"### {p.pattern.tag} ({p.pattern.category}) → {head}",
            f"**{title}**",
            f"- **Success Rate:** {pct(raw_rate(p.success, p.failure))}%",
            f"- **Applications:** {p.success + p.failure}",
            f"- **Projects:** {len(p.pattern.projects)}",
            "",
        ]
    out.append("Use `solution_preview` with a solution_id above to see its steps.")
    return "\n".join(out)


__all__ = [
    "pct",
    "raw_rate",
    "solution_search",
    "solution_preview",
    "solution_apply",
    "solution_created",
    "not_found",
    "pattern_detect",
    "pattern_solutions",
    "pattern_link",
    "golden_paths",
]
