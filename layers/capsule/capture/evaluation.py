"""Precision and recall of capture's candidates against labelled events (pure functions).

An event counts as proposed when :func:`~capsule.capture.scoring.score_event` yields a
candidate for it. Two dataset shapes are read: Capsule's own labelled set
(``{"format": "capsule-capture-eval", "events": [{split, session, role, text, label, ...}]}``)
and LongMemEval (a list of questions whose ``haystack_sessions`` turns carry
``has_answer``: those turns are labelled facts about the user, the others are not;
questions alternate between the ``even`` and ``odd`` splits so a tuning half stays apart).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..core.errors import InvalidInput
from .scoring import PROPOSE_AT, Event, score_event


@dataclass(frozen=True)
class Labelled:
    split: str
    event: Event
    label: bool


def _own(data: dict[str, Any]) -> Iterator[Labelled]:
    for number, item in enumerate(data.get("events") or []):
        try:
            yield Labelled(
                str(item["split"]),
                Event(item["role"], item["text"], tuple(item.get("tool_results") or ())),
                bool(item["label"]),
            )
        except (KeyError, TypeError) as exc:
            raise InvalidInput(f"events[{number}] lacks {exc}", field=f"events[{number}]") from None


def _longmemeval(data: list[Any]) -> Iterator[Labelled]:
    for number, question in enumerate(data):
        split = "even" if number % 2 == 0 else "odd"
        for session in question.get("haystack_sessions") or []:
            for turn in session:
                yield Labelled(split, Event(turn["role"], turn["content"]), bool(turn.get("has_answer")))


def labelled_events(data: Any) -> tuple[str, list[Labelled]]:
    """The dataset's name and its events with their labels."""
    if isinstance(data, dict) and data.get("format") == "capsule-capture-eval":
        return "capsule-capture-eval", list(_own(data))
    if isinstance(data, list) and data and isinstance(data[0], dict) and "haystack_sessions" in data[0]:
        return "longmemeval", list(_longmemeval(data))
    raise InvalidInput(
        "not a capture dataset: expected Capsule's labelled events or a LongMemEval file", field="dataset"
    )


def metrics(pairs: Iterable[tuple[bool, bool]]) -> dict[str, float]:
    """Precision, recall and F1 of (proposed, label) pairs, with the counts."""
    tp = fp = fn = n = 0
    for proposed, label in pairs:
        n += 1
        tp += proposed and label
        fp += proposed and not label
        fn += label and not proposed
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "events": n,
        "positives": tp + fn,
        "proposed": tp + fp,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
    }


CURVE = (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


def scores(events: list[Labelled], floor: float = min(CURVE)) -> list[float | None]:
    """Each event's candidate score, None where it yields none scoring ``floor`` or more (a floor
    below the scorer's PROPOSE_AT, so that the curve can show what a lower threshold would give)."""
    found = [score_event(item.event, propose_at=floor) for item in events]
    return [None if f is None else f.score for f in found]


def _report(events: list[Labelled], scored: list[float | None], threshold: float | None) -> dict[str, dict[str, float]]:
    at = PROPOSE_AT if threshold is None else threshold
    results = [(item.split, s is not None and s >= at, item.label) for item, s in zip(events, scored)]
    report = {
        split: metrics((p, label) for s, p, label in results if s == split) for split in sorted({r[0] for r in results})
    }
    report["all"] = metrics((p, label) for _, p, label in results)
    return report


def evaluate(
    events: list[Labelled], *, threshold: float | None = None, scored: list[float | None] | None = None
) -> dict[str, dict[str, float]]:
    """Metrics per split and overall; ``threshold``: count only candidates scoring at least this
    (default: every candidate the scorer proposes, those at PROPOSE_AT or more)."""
    return _report(events, scores(events) if scored is None else scored, threshold)


def curve(
    events: list[Labelled], thresholds: Iterable[float] = CURVE, scored: list[float | None] | None = None
) -> list[dict[str, Any]]:
    """The precision/recall curve: the metrics per split at each threshold (events scored once)."""
    scored = scores(events) if scored is None else scored
    return [{"threshold": t, "splits": _report(events, scored, t)} for t in thresholds]
