"""Stored learning records as the models the API returns (pure conversions)."""

from __future__ import annotations

from ..core import limits
from ..core.learning_records import LinkRecord, PatternRecord, SolutionRecord
from ..core.records import MemoryRecord
from ..search.ranking import wilson_lower_bound
from . import models


def rate(success: int, failure: int) -> float:
    return round(wilson_lower_bound(success, success + failure), 6)


def to_solution(record: SolutionRecord) -> models.Solution:
    # Counts written before they saturated may exceed the model's bound: read them at the bound.
    success, failure = (min(max(n, 0), limits.MAX_COUNT) for n in (record.success, record.failure))
    return models.Solution(
        **record.body,
        id=record.id,
        success_count=success,
        failure_count=failure,
        success_rate=rate(success, failure),
        created_at=record.created_at,
        updated_at=record.updated_at,
        last_applied_at=record.last_applied_at,
        verified_on=record.verified_on,
    )


def to_pattern(record: PatternRecord) -> models.Pattern:
    return models.Pattern(
        tag=record.tag,
        category=record.category,
        terms=record.terms,
        occurrences=record.occurrences,
        projects=record.projects,
        examples=record.examples,
        description=record.description,
        first_seen=record.first_seen,
        last_seen=record.last_seen,
    )


def linked_solution(link: LinkRecord, solution: SolutionRecord) -> models.LinkedSolution:
    worked = rate(link.success, link.failure)
    return models.LinkedSolution(
        id=solution.id,
        title=solution.title,
        category=solution.category,
        success=link.success,
        failure=link.failure,
        success_rate=worked,
        explanation=(
            f"worked {link.success} of {link.success + link.failure} times for pattern '{link.tag}'"
            f" (Wilson lower bound {worked:.2f})"
        ),
    )


def linked_fix(link: LinkRecord, memory: MemoryRecord) -> models.LinkedFix:
    worked = rate(link.success, link.failure)
    return models.LinkedFix(
        memory_id=memory.id,
        project=memory.project,
        content=memory.content[:500],
        success=link.success,
        failure=link.failure,
        success_rate=worked,
        explanation=(
            f"recorded as a success in project '{memory.project}' after this error"
            f" ({link.success} success(es) for pattern '{link.tag}', Wilson lower bound {worked:.2f})"
        ),
    )
