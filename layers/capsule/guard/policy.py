"""What a project does with the detector's findings, applied once on the way in.

``flag`` keeps the text and records the kinds and spans; ``redact`` replaces each value with
``[REDACTED:<kind>]`` before anything is stored or embedded; ``refuse`` raises (422 naming the
kinds) before anything is written. Secrets and personal data have a policy each.
"""

from __future__ import annotations

import re
from collections import namedtuple

from ..core.errors import InvalidInput
from .detect import Finding, detect

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    Policy = Literal["flag", "redact", "refuse"]
POLICIES: tuple[str, ...] = ("flag", "redact", "refuse")
PLACEHOLDER = re.compile(r"\[REDACTED:([a-z-]+)\]")
GUARD_KEY = "_guard"  # the reserved meta key that holds the findings of a stored text


# Named tuples and plain classes, not dataclasses: a hook keeping a write in its spool guards it,
# and dataclasses (with inspect) and typing would be most of that hook's start-up.
class Policies(namedtuple("Policies", "secrets pii", defaults=("redact", "flag"))):
    __slots__ = ()

    def of(self, finding: Finding) -> str:
        return self.secrets if finding.category == "secrets" else self.pii


class Guarded(namedtuple("Guarded", "text report")):
    # report: {"secrets": [...], "pii": [...]}: spans in ``text``
    __slots__ = ()

    @property
    def empty(self) -> bool:
        return not (self.report["secrets"] or self.report["pii"])


def refuse(findings: list[Finding], policies: Policies, field: str) -> None:
    refused = sorted({f.kind for f in findings if policies.of(f) == "refuse"})
    if refused:
        setting = sorted({f"{f.category}_policy" for f in findings if policies.of(f) == "refuse"})
        raise InvalidInput(
            f"{field} holds {', '.join(refused)}; the project's {' and '.join(setting)} is refuse,"
            " so nothing was stored",
            field=field,
        )


def guard_text(text: str, policies: Policies, *, field: str = "content") -> Guarded:
    """The text to store and its findings; raises :class:`InvalidInput` under ``refuse``."""
    findings = detect(text)
    refuse(findings, policies, field)
    out: list[str] = []
    report: dict[str, list[dict[str, Any]]] = {"secrets": [], "pii": []}
    cursor = length = 0
    for finding in findings:
        out.append(text[cursor : finding.start])
        length += finding.start - cursor
        action = policies.of(finding)
        value = f"[REDACTED:{finding.kind}]" if action == "redact" else text[finding.start : finding.end]
        out.append(value)
        report[finding.category].append(
            {
                "kind": finding.kind,
                "start": length,
                "end": length + len(value),
                "action": "redacted" if action == "redact" else "flagged",
            }
        )
        length += len(value)
        cursor = finding.end
    out.append(text[cursor:])
    return Guarded("".join(out), report)


def check_reserved(meta: dict[str, Any]) -> None:
    """A caller's own ``_guard`` is refused, so the detector's record cannot be forged."""
    if GUARD_KEY in meta:
        raise InvalidInput(
            f"meta.{GUARD_KEY} is reserved for the findings of the secrets and personal-data detector",
            field=f"meta.{GUARD_KEY}",
        )


def rescan(text: str, policies: Policies, *, field: str = "content") -> Guarded:
    """:func:`guard_text` of a piece of an already guarded text (an ingest chunk): its own flags,
    and the placeholders the whole text's redaction left in it, as redacted findings."""
    return with_placeholders(guard_text(text, policies, field=field))


def with_placeholders(guarded: Guarded) -> Guarded:
    """``guarded``'s flags, and every placeholder in its text as a redacted finding: what a text
    guarded more than once reports (each redaction once, whichever pass made it)."""
    report = {
        "secrets": [f for f in guarded.report["secrets"] if f["action"] == "flagged"],
        "pii": [f for f in guarded.report["pii"] if f["action"] == "flagged"],
    }
    for match in PLACEHOLDER.finditer(guarded.text):
        category = "secrets" if Finding(match.group(1), 0, 0).category == "secrets" else "pii"
        report[category].append(
            {"kind": match.group(1), "start": match.start(), "end": match.end(), "action": "redacted"}
        )
    for findings in report.values():
        findings.sort(key=lambda f: f["start"])
    return Guarded(guarded.text, report)
