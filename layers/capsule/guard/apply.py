"""The guard on the way in, for the service: one call guards a write's texts and says so.

Kept beside the service (not in it) so the service's write path gains one line per route.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .policy import GUARD_KEY, Guarded, Policies, check_reserved, guard_text, rescan
from .tree import TreeReport, guard_tree


@dataclass(frozen=True)
class GuardedWrite:
    texts: list[str]
    explanation: str | None
    guards: list[Guarded]
    explanation_guard: Guarded | None
    meta: dict[str, Any]  # the caller's meta, its strings guarded too
    meta_found: TreeReport

    def meta_for(self, index: int) -> dict[str, Any]:
        """The meta of the ``index``-th text's record: the guarded meta with the findings, when
        there are any (spans for the text and the explanation, kinds for the meta)."""
        report: dict[str, Any] = {k: v for k, v in self.guards[index].report.items() if v}
        if self.explanation_guard is not None and not self.explanation_guard.empty:
            report["explanation"] = {k: v for k, v in self.explanation_guard.report.items() if v}
        if self.meta_found.redacted or self.meta_found.flagged:
            report["meta"] = {"redacted": sorted(self.meta_found.redacted), "flagged": sorted(self.meta_found.flagged)}
        return {**self.meta, GUARD_KEY: report} if report else dict(self.meta)

    def note(self) -> str:
        """One sentence for the write's explanation (empty when nothing was found)."""
        every = [g for g in self.guards] + ([self.explanation_guard] if self.explanation_guard else [])
        redacted = sorted(
            {f["kind"] for g in every for fs in g.report.values() for f in fs if f["action"] == "redacted"}
            | self.meta_found.redacted
        )
        flagged = sorted(
            {f["kind"] for g in every for fs in g.report.values() for f in fs if f["action"] == "flagged"}
            | self.meta_found.flagged
        )
        parts = []
        if redacted:
            parts.append(f"redacted {', '.join(redacted)} before storing or embedding")
        if flagged:
            parts.append(f"flagged {', '.join(flagged)} (meta.{GUARD_KEY})")
        return f" Guard: {'; '.join(parts)}." if parts else ""


def guard_write(
    texts: list[str], explanation: str | None, meta: dict[str, Any], policies: Policies, *, field: str = "content"
) -> GuardedWrite:
    """Every text of one write guarded; raises (422) before anything is written when a policy
    refuses, or the caller's meta uses the reserved key."""
    check_reserved(meta)
    guards = [guard_text(text, policies, field=field) for text in texts]
    explanation_guard = None if explanation is None else guard_text(explanation, policies, field="explanation")
    meta_found = TreeReport()
    return GuardedWrite(
        texts=[g.text for g in guards],
        explanation=None if explanation_guard is None else explanation_guard.text,
        guards=guards,
        explanation_guard=explanation_guard,
        meta=guard_tree(meta, policies, meta_found, where="meta"),
        meta_found=meta_found,
    )


def guard_chunks(
    text: str, chunker: Callable[[str], list[str]], meta: dict[str, Any], policies: Policies
) -> GuardedWrite:
    """An ingest: the whole text is guarded before it is split, so a key cut in two by a chunk
    boundary (or repeated in the overlap) is still found whole; each chunk then carries its own
    findings."""
    check_reserved(meta)
    whole = guard_text(text, policies, field="text")
    guards = [rescan(chunk, policies) for chunk in chunker(whole.text)]
    meta_found = TreeReport()
    return GuardedWrite(
        texts=[g.text for g in guards],
        explanation=None,
        guards=guards,
        explanation_guard=None,
        meta=guard_tree(meta, policies, meta_found, where="meta"),
        meta_found=meta_found,
    )
