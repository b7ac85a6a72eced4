"""What an import did, row kind by row kind: imported, skipped as already present, refused; and
each source column it had no place for, named with the reason (nothing is dropped unsaid)."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

MAX_LISTED = 100  # refusals listed in full; the rest are counted


class Refusal(BaseModel):
    line: int = Field(description="1-based line (or row) number in the input")
    field: str = Field(description="the field that failed, or 'row' for the whole line")
    message: str


class NotPlaced(BaseModel):
    column: str = Field(description="table.column in the source")
    reason: str = Field(description="why it has no place here, and where its information went if anywhere")


class DataImportResult(BaseModel):
    source: str
    lines: int = Field(description="input lines (or source rows) read")
    imported: dict[str, int]
    skipped: dict[str, int] = Field(description="rows already present, left as they are")
    refused: list[Refusal] = Field(description=f"the first {MAX_LISTED} refused rows with their reasons")
    refused_total: int
    complete: bool = Field(description="the input ended where it says it ends (not cut short)")
    not_placed: list[NotPlaced] = Field(
        default_factory=list, description="source columns not imported as such, each with its reason"
    )
    explanation: str


class Tally:
    """Counts while an import runs; :meth:`result` says what they add up to."""

    def __init__(self, source: str, unit: str = "line") -> None:
        self.source, self.unit = source, unit
        self.lines = 0
        self.imported: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.refused: list[Refusal] = []
        self.refused_total = 0
        self.complete = False
        self.notes: list[str] = []
        self.not_placed: list[NotPlaced] = []
        self.redacted: Counter[str] = Counter()  # row kind -> rows the guard redacted (capsule.guard.stored)
        self.redacted_kinds: set[str] = set()
        self.reembed = 0  # memories whose content changed: new sha256, the carried vector dropped

    def guarded(self, kind: str, kinds: set[str]) -> None:
        """Count a row the guard redacted (``kinds``: what it redacted; none: nothing)."""
        if kinds:
            self.redacted[kind] += 1
            self.redacted_kinds |= kinds

    def _redaction_note(self) -> str:
        rows = ", ".join(f"{n} {kind}" for kind, n in sorted(self.redacted.items()))
        text = (
            f" Guard: redacted {', '.join(sorted(self.redacted_kinds))} before writing ({rows} row(s)), by each"
            " project's secrets and personal-data policies."
        )
        if self.reembed:
            text += (
                f" {self.reembed} memory(ies) whose content changed got a new sha256 and lost the vector they"
                " carried: they are pending_embedding, embedded by the backfill job."
            )
        return text

    def unplaced(self, column: str, reason: str) -> None:
        """Name a source column this import has no place for (once per column)."""
        if all(u.column != column for u in self.not_placed):
            self.not_placed.append(NotPlaced(column=column, reason=reason))

    def refuse(self, line: int, field: str, message: str) -> None:
        self.refused_total += 1
        if len(self.refused) < MAX_LISTED:
            self.refused.append(Refusal(line=line, field=field, message=message))

    def result(self) -> DataImportResult:
        def said(counts: Counter[str]) -> str:
            return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()) if n) or "nothing"

        text = (
            f"Read {self.lines} {self.unit}(s) from {self.source}: imported {said(self.imported)}; "
            f"skipped as already present {said(self.skipped)}; refused {self.refused_total}."
        )
        if self.refused:
            first = self.refused[0]
            text += f" First refusal: {self.unit} {first.line}, {first.field}: {first.message}."
        if not self.complete:
            text += " The input ended before its end line: it was cut short, so rows after that are missing."
        if self.redacted:
            text += self._redaction_note()
        text += "".join(f" {note}" for note in self.notes)
        if self.not_placed:
            text += (
                f" Not placed ({len(self.not_placed)} source column(s), each with its reason in not_placed): "
                f"{', '.join(u.column for u in self.not_placed)}."
            )
        return DataImportResult(
            source=self.source,
            lines=self.lines,
            imported=_nonzero(self.imported),
            skipped=_nonzero(self.skipped),
            refused=self.refused,
            refused_total=self.refused_total,
            complete=self.complete,
            not_placed=self.not_placed,
            explanation=text,
        )


def _nonzero(counts: Counter[str]) -> dict[str, int]:
    return {kind: n for kind, n in sorted(counts.items()) if n}
