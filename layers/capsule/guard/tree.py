"""The guard over a JSON document (a fixpack): every string in it, by the same policies.

Findings are not kept in the document (its shape is a published format); the caller says which
kinds were redacted or flagged. A secret in a regex is replaced by the escaped placeholder, so
the pattern stays a valid pattern that matches the placeholder text.
"""

from __future__ import annotations

import re

from .policy import PLACEHOLDER, Guarded, Policies, guard_text

REGEX_KEYS = ("regexes", "regex", "pattern")


TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class TreeReport:
    """The kinds redacted and flagged over a whole document (a plain class: see detect.Finding)."""

    def __init__(self, redacted: set[str] | None = None, flagged: set[str] | None = None) -> None:
        self.redacted = set() if redacted is None else redacted
        self.flagged = set() if flagged is None else flagged

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TreeReport) and (self.redacted, self.flagged) == (other.redacted, other.flagged)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def __repr__(self) -> str:
        return f"TreeReport(redacted={self.redacted!r}, flagged={self.flagged!r})"

    def note(self) -> str:
        parts = []
        if self.redacted:
            parts.append(f"redacted {', '.join(sorted(self.redacted))} before storing or embedding")
        if self.flagged:
            parts.append(f"found {', '.join(sorted(self.flagged))} (kept: the policy is flag)")
        return f" Guard: {'; '.join(parts)}." if parts else ""


def _guard_string(value: str, policies: Policies, where: str, key: str | None) -> Guarded:
    """A value under a key is read with its key in front (``AWS_SECRET_ACCESS_KEY=...``), so a
    secret that is recognised only by the name it is assigned to is found; the key is then cut
    off again (when a finding reached into the key itself, the value is guarded alone)."""
    field = where or "body"
    if key is None:
        return guard_text(value, policies, field=field)
    prefix = f"{key}="
    guarded = guard_text(prefix + value, policies, field=field)
    if not guarded.text.startswith(prefix) or any(
        f["start"] < len(prefix) for fs in guarded.report.values() for f in fs
    ):
        return guard_text(value, policies, field=field)
    shifted = {
        category: [{**f, "start": f["start"] - len(prefix), "end": f["end"] - len(prefix)} for f in findings]
        for category, findings in guarded.report.items()
    }
    return Guarded(guarded.text[len(prefix) :], shifted)


def guard_tree(
    value: Any, policies: Policies, report: TreeReport, *, where: str = "", regex: bool = False, key: str | None = None
) -> Any:
    """``value`` with every string guarded; raises InvalidInput naming the field under refuse."""
    if isinstance(value, str):
        guarded = _guard_string(value, policies, where, key)
        for findings in guarded.report.values():
            for finding in findings:
                (report.redacted if finding["action"] == "redacted" else report.flagged).add(finding["kind"])
        return PLACEHOLDER.sub(lambda m: re.escape(m.group()), guarded.text) if regex else guarded.text
    if isinstance(value, dict):
        return {
            key: guard_tree(
                item, policies, report, where=f"{where}.{key}".lstrip("."), regex=regex or key in REGEX_KEYS, key=key
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [guard_tree(item, policies, report, where=f"{where}.{i}", regex=regex) for i, item in enumerate(value)]
    return value
