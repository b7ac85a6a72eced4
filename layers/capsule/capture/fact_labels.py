"""Hand labels of LongMemEval user turns: does the turn state a durable fact about the user?

``has_answer`` marks only the turns a later question asks about, so precision against it
measures question prediction, not fact detection: most user turns that tell a fact carry no
``has_answer``. A label file (``{"format": "capsule-capture-fact-labels", "labels":
[{question_id, session, turn, fact, why}]}``, written by a person by a rubric) labels every
user turn of a sample; it refers to turns by position and holds none of their text, which is
read from the LongMemEval file at evaluation time.

A labelled turn counts as a fact when it is labelled so **or** marked ``has_answer`` (those
are facts by definition); the annotator's agreement with ``has_answer`` is counted beside.
Pure functions; the metrics are :mod:`.evaluation`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import InvalidInput
from .evaluation import Labelled
from .scoring import Event

FORMAT = "capsule-capture-fact-labels"
_FIELDS = {"question_id": str, "session": int, "turn": int, "fact": bool, "why": str}


@dataclass(frozen=True)
class FactSample:
    """The labelled turns as two labellings of the same events (scored once)."""

    facts: list[Labelled]  # label: fact by hand, or has_answer
    has_answer: list[Labelled]  # label: has_answer only
    agreement: dict[str, dict[str, int]]  # per split: has_answer turns, of which labelled fact


def _label(number: int, item: Any) -> dict[str, Any]:
    where = f"labels[{number}]"
    if not isinstance(item, dict):
        raise InvalidInput(f"{where} is not an object", field=where)
    unknown = sorted(set(item) - set(_FIELDS))
    if unknown:
        raise InvalidInput(f"{where} has an unknown field {unknown[0]!r}", field=f"{where}.{unknown[0]}")
    for name, kind in _FIELDS.items():
        value = item.get(name)
        # bool is an int in Python: a session of True is refused, not read as 1
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InvalidInput(f"{where}.{name} must be a {kind.__name__}", field=f"{where}.{name}")
    return item


def parse(data: Any, *, dataset_sha256: str | None = None) -> list[dict[str, Any]]:
    """The label file's labels, checked; ``dataset_sha256``: the LongMemEval file's, refused
    when the label file records another (its references would point at other turns)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidInput(f"not a fact label file: expected format {FORMAT!r}", field="labels")
    dataset = data.get("dataset")
    recorded = dataset.get("sha256") if isinstance(dataset, dict) else None
    if dataset_sha256 is not None and recorded is not None and recorded != dataset_sha256:
        raise InvalidInput(
            f"the labels were made on another file (sha256 {recorded[:12]}...), not this one",
            field="labels.dataset.sha256",
        )
    labels = data.get("labels")
    if not isinstance(labels, list) or not labels:
        raise InvalidInput("labels must be a non-empty list", field="labels.labels")
    parsed = [_label(n, item) for n, item in enumerate(labels)]
    seen: set[tuple[str, int, int]] = set()
    for number, item in enumerate(parsed):
        key = (item["question_id"], item["session"], item["turn"])
        if key in seen:
            raise InvalidInput(f"labels[{number}] labels {key} twice", field=f"labels[{number}]")
        seen.add(key)
    return parsed


def _turn(questions: dict[str, tuple[int, dict]], number: int, item: dict) -> tuple[int, dict]:
    where = f"labels[{number}]"
    found = questions.get(item["question_id"])
    if found is None:
        raise InvalidInput(f"{where}: no question {item['question_id']!r} in the dataset", field=f"{where}.question_id")
    position, question = found
    sessions = question.get("haystack_sessions") or []
    if not 0 <= item["session"] < len(sessions):
        raise InvalidInput(
            f"{where}: question {item['question_id']} has no session {item['session']}", field=f"{where}.session"
        )
    if not 0 <= item["turn"] < len(sessions[item["session"]]):
        raise InvalidInput(f"{where}: session {item['session']} has no turn {item['turn']}", field=f"{where}.turn")
    turn = sessions[item["session"]][item["turn"]]
    if turn.get("role") != "user":
        raise InvalidInput(
            f"{where} refers to a {turn.get('role')} turn; only user turns are labelled", field=f"{where}.turn"
        )
    return position, turn


def sample(dataset: list[Any], labels: list[dict[str, Any]]) -> FactSample:
    """The labelled turns of a LongMemEval list, split as :mod:`.evaluation` splits it
    (questions at even positions: ``even``, at odd: ``odd``)."""
    questions: dict[Any, tuple[int, dict]] = {
        q.get("question_id"): (n, q) for n, q in enumerate(dataset) if isinstance(q, dict)
    }
    facts: list = []
    answers: list = []
    agreement: dict = {}
    for number, item in enumerate(labels):
        position, turn = _turn(questions, number, item)
        split = "even" if position % 2 == 0 else "odd"
        event, has_answer = Event("user", turn["content"]), bool(turn.get("has_answer"))
        facts.append(Labelled(split, event, item["fact"] or has_answer))
        answers.append(Labelled(split, event, has_answer))
        counts = agreement.setdefault(
            split, {"turns": 0, "labelled_fact": 0, "has_answer": 0, "has_answer_labelled_fact": 0}
        )
        counts["turns"] += 1
        counts["labelled_fact"] += item["fact"]
        counts["has_answer"] += has_answer
        counts["has_answer_labelled_fact"] += has_answer and item["fact"]
    return FactSample(facts, answers, agreement)
