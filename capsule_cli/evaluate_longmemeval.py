"""``capsule eval longmemeval PATH``: LongMemEval as a turn-level retrieval test through the real service.

The protocol of the data's README: each question's turns become the memories of a fresh project
(author = the turn's role, session = its session id, occurred at its session's date, a second
apart in order); the question is searched in its project ``as_of`` its own date; the turns marked
``has_answer`` are the relevant ones (a question with none is skipped, and so is an abstention
question, ``_abs``: what it asks was never said; 239 of the 251 development questions remain).
Reported per question type
and overall: Recall@1/5/10, Hit@5 and NDCG@10, for hybrid, vector and BM25, with the embedder named.

The data is read from the given path, never copied.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from capsule import InvalidInput
from capsule.core.embedder_names import EMBEDDER_NAMES

from .evaluate_common import MODES, TENANT, build_eval_service, prewarm, scores, store_turns

_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\(\w+\))?(?:\s+(\d{1,2}):(\d{2}))?")


def parse_date(text: str) -> datetime:
    """``2023/05/20 (Sat) 02:21`` -> an aware datetime (UTC)."""
    match = _DATE.fullmatch(str(text).strip())
    if not match:
        raise InvalidInput(f"cannot read the date {text!r}", field="haystack_dates")
    year, month, day, hour, minute = (int(g) if g else 0 for g in match.groups())
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


@dataclass
class Turn:
    key: str  # question id, session index, turn index
    content: str
    author: str
    session: str
    occurred_at: datetime
    relevant: bool


@dataclass
class Question:
    question_id: str
    kind: str
    text: str
    asked_at: datetime
    turns: list[Turn] = field(default_factory=list)

    @property
    def abstention(self) -> bool:
        """An ``_abs`` question asks what was never said: its marked turns hold no answer."""
        return self.question_id.endswith("_abs")

    @property
    def relevant(self) -> list[str]:
        return [t.key for t in self.turns if t.relevant]


def load_longmemeval(path: Path) -> list[Question]:
    try:
        items = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read LongMemEval data from {path}: {exc}", field="path") from exc
    if not isinstance(items, list):
        raise InvalidInput("LongMemEval data is a list of questions", field="path")
    return [_question(item, n) for n, item in enumerate(items)]


def _question(item: Any, number: int) -> Question:
    try:
        return _read_question(item)
    except (KeyError, TypeError, AttributeError) as exc:
        raise InvalidInput(f"LongMemEval question {number} is not a question object ({exc!r})", field="path") from exc


def _read_question(item: dict[str, Any]) -> Question:
    q = Question(
        str(item["question_id"]), str(item["question_type"]), str(item["question"]), parse_date(item["question_date"])
    )
    sessions = zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"])
    for s, (session_id, date, turns) in enumerate(sessions):
        when = parse_date(date)
        for t, turn in enumerate(turns):
            content = str(turn.get("content", "")).strip()
            if not content:
                continue
            q.turns.append(
                Turn(
                    f"{q.question_id}/{s}/{t}",
                    content,
                    str(turn.get("role", "")),
                    str(session_id),
                    when + timedelta(seconds=t),
                    bool(turn.get("has_answer")),
                )
            )
    return q


def summarise(rows: list[tuple[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for kind, values in rows:
        groups[kind].append(values)
        groups["overall"].append(values)
    return {
        name: {"n": len(items), **{m: round(sum(v[m] for v in items) / len(items), 4) for m in items[0]}}
        for name, items in sorted(groups.items())
    }


def load_into(service, questions: list[Question]) -> dict[str, str]:
    """Store each question's turns in its own project; returns memory id -> turn key."""
    prewarm(service, ([(t.content, t.session) for t in q.turns] for q in questions), (q.text[:8000] for q in questions))
    key_of: dict[str, str] = {}
    for q in questions:
        key_of.update(store_turns(service, q.question_id, q.turns, "longmemeval", lambda turn: turn.key))
    return key_of


def run_eval(service, questions: list[Question], modes=MODES, k: int = 10, as_of: bool = True) -> dict[str, Any]:
    scored = [q for q in questions if q.relevant and not q.abstention]
    key_of = load_into(service, scored)
    report: dict[str, Any] = {
        "embedder": service.embedder.model_id,
        "modes": {},
        "skipped_no_evidence": sum(1 for q in questions if not q.relevant),
        "skipped_abstention": sum(1 for q in questions if q.relevant and q.abstention),
    }
    for mode in modes:
        rows, started = [], time.perf_counter()
        for q in scored:
            request = {"project": q.question_id, "query": q.text[:8000], "k": k, "mode": mode}
            if as_of:
                request["as_of"] = q.asked_at
            result = service.search(TENANT, request)
            rows.append((q.kind, scores([key_of[h.id] for h in result.results], q.relevant)))
        report["modes"][mode] = summarise(rows)
        report["modes"][mode]["_ms_per_query"] = round((time.perf_counter() - started) * 1000 / max(len(rows), 1), 2)
    return report


def render(report: dict[str, Any]) -> str:
    lines = [
        f"embedder: {report['embedder']}  (skipped: {report['skipped_no_evidence']} questions without evidence, "
        f"{report['skipped_abstention']} abstention questions)",
        f"{'mode':<7} {'type':<26} {'n':>4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'Hit@5':>6} {'NDCG@10':>8}",
    ]
    for mode, groups in report["modes"].items():
        for name, v in groups.items():
            if not name.startswith("_"):
                lines.append(
                    f"{mode:<7} {name:<26} {v['n']:>4} {v['R@1']:>6.3f} {v['R@5']:>6.3f} "
                    f"{v['R@10']:>6.3f} {v['Hit@5']:>6.3f} {v['NDCG@10']:>8.3f}"
                )
        lines.append(f"{mode:<7} {groups['_ms_per_query']} ms per query (embedding included)")
    return "\n".join(lines)


def cmd_eval(args: argparse.Namespace) -> None:
    questions = load_longmemeval(Path(args.path))
    if args.limit:
        questions = questions[: args.limit]
    with tempfile.TemporaryDirectory(prefix="capsule-eval-") as tmp:
        service = build_eval_service(args, Path(tmp))
        try:
            report = run_eval(service, questions, modes=args.mode or MODES, as_of=not args.wall_clock)
        finally:
            service.store.close()
    report["options"] = {k: getattr(service._options, k) for k in service._options.__dataclass_fields__}
    report["weights"] = {k: getattr(service.settings.weights, k) for k in ("vector", "bm25", "time", "feedback")}
    report["as_of"] = "wall clock" if args.wall_clock else "question date"
    report["data"] = {
        "path": str(args.path),
        "questions": len(questions),
        "turns": sum(len(q.turns) for q in questions),
    }
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps(report, indent=2, default=str) if args.json else render(report))


def register(sub) -> None:
    q = sub.add_parser("longmemeval", help="LongMemEval: each question a project of its sessions' turns")
    q.add_argument("path", help="the LongMemEval JSON file (read in place)")
    q.add_argument("--mode", action="append", choices=MODES, help="only these modes (repeatable)")
    q.add_argument("--limit", type=int, help="only the first N questions")
    q.add_argument("--embedder", choices=EMBEDDER_NAMES)
    q.add_argument("--cache", help="an SQLite file keeping embeddings between runs")
    q.add_argument(
        "--option", action="append", metavar="NAME=VALUE", help="override a search option, e.g. window=off (repeatable)"
    )
    q.add_argument(
        "--wall-clock",
        action="store_true",
        help="search as of now instead of the question's date (what a search without as_of does)",
    )
    q.add_argument("--out", help="also write the report as JSON here")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=cmd_eval)


__all__ = ["parse_date", "load_longmemeval", "run_eval", "register"]
