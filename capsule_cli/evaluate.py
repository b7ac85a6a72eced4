"""``capsule eval locomo PATH``: the LoCoMo benchmark as a retrieval test through the real service.

Each conversation becomes its own project; each dialog turn one memory ``[date] speaker: text``
(an image the speaker shared is kept as ``[image: caption]``) with the speaker as its author,
its session as its session and the session's date as when it happened; each question is a
search in its conversation. Reported per category (1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial) and overall (1-4): Recall@1/5/10, Hit@5 and NDCG@10, for the
hybrid ranking, vector only and BM25 only, with the embedder named.

The data's licence is non-commercial: it is read from the given path, never copied.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from capsule import InvalidInput
from capsule.core.embedder_names import EMBEDDER_NAMES

from .evaluate_common import MODES, TENANT, build_eval_service, prewarm, scores, store_turns

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
OVERALL = (1, 2, 3, 4)
_DIA = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def normalise_evidence(items: Iterable[Any]) -> list[str]:
    """Evidence ids as ``D<session>:<turn>``: splits ``D8:6; D9:17``, mends ``D:11:26`` and
    ``D30:05``, drops what names no turn. Order kept, duplicates dropped."""
    out: list[str] = []
    for item in items or []:
        for session, turn in _DIA.findall(str(item)):
            dia = f"D{int(session)}:{int(turn)}"
            if dia not in out:
                out.append(dia)
    return out


def parse_session_date(text: str) -> datetime:
    """``1:56 pm on 8 May, 2023`` -> an aware datetime (UTC)."""
    cleaned = re.sub(r"\s+", " ", text.strip())
    for pattern in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(cleaned, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise InvalidInput(f"cannot read the session date {text!r}", field="session_date_time")


@dataclass
class Turn:
    dia_id: str
    content: str
    author: str
    session: str
    occurred_at: datetime


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def load_locomo(path: Path) -> list[Conversation]:
    try:
        samples = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read LoCoMo data from {path}: {exc}", field="path") from exc
    if not isinstance(samples, list):
        raise InvalidInput("LoCoMo data is a list of samples", field="path")
    return [_conversation(sample, n) for n, sample in enumerate(samples)]


def _conversation(sample: dict[str, Any], number: int) -> Conversation:
    conv = Conversation(str(sample.get("sample_id") or f"conv-{number}"))
    dialog = sample.get("conversation") or {}
    sessions = sorted(
        (int(m.group(1)), key)
        for key in dialog
        if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(dialog[key], list)
    )
    for session, key in sessions:
        date_text = dialog.get(f"{key}_date_time", "")
        when = parse_session_date(date_text)
        for offset, turn in enumerate(dialog[key]):
            text = str(turn.get("text", "")).strip()
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            conv.turns.append(
                Turn(
                    dia_id=normalise_evidence([turn.get("dia_id", "")])[0]
                    if turn.get("dia_id")
                    else f"D{session}:{offset + 1}",
                    content=f"[{date_text}] {turn.get('speaker', '?')}: {text}",
                    author=str(turn.get("speaker", "")),
                    session=f"session {session}",
                    occurred_at=when + timedelta(seconds=offset),
                )
            )
    for qa in sample.get("qa") or []:
        conv.questions.append(
            Question(
                str(qa.get("question", "")), int(qa.get("category", 0)), normalise_evidence(qa.get("evidence", []))
            )
        )
    return conv


# ---- metrics ------------------------------------------------------------------


def summarise(rows: list[tuple[int, dict[str, float]]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for category, values in rows:
        groups[f"{category} {CATEGORIES.get(category, '?')}"].append(values)
        if category in OVERALL:
            groups["overall (1-4)"].append(values)
    return {
        name: {"n": len(items), **{m: round(sum(v[m] for v in items) / len(items), 4) for m in items[0]}}
        for name, items in sorted(groups.items())
    }


# ---- running ------------------------------------------------------------------


def load_into(service, conversations: list[Conversation]) -> dict[str, str]:
    """Store every turn in order (each is embedded with the turn before it, as a live chat
    would be: see capsule.service.context); returns memory id -> dia id."""
    prewarm(
        service,
        ([(t.content, t.session) for t in c.turns] for c in conversations),
        (q.text[:8000] or "?" for c in conversations for q in c.questions if q.evidence),
    )
    dia_of: dict[str, str] = {}
    for conv in conversations:
        dia_of.update(store_turns(service, conv.sample_id, conv.turns, "locomo", lambda turn: turn.dia_id))
    return dia_of


def run_eval(service, conversations: list[Conversation], modes=MODES, k: int = 10) -> dict[str, Any]:
    dia_of = load_into(service, conversations)
    report: dict[str, Any] = {"embedder": service.embedder.model_id, "modes": {}, "skipped_no_evidence": 0}
    questions = [(c, q) for c in conversations for q in c.questions]
    report["skipped_no_evidence"] = sum(1 for _, q in questions if not q.evidence)
    for mode in modes:
        rows, started = [], time.perf_counter()
        for conv, question in questions:
            if not question.evidence:
                continue
            result = service.search(
                TENANT, {"project": conv.sample_id, "query": question.text[:8000] or "?", "k": k, "mode": mode}
            )
            rows.append((question.category, scores([dia_of[h.id] for h in result.results], question.evidence)))
        report["modes"][mode] = summarise(rows)
        report["modes"][mode]["_ms_per_query"] = round((time.perf_counter() - started) * 1000 / max(len(rows), 1), 2)
    return report


def render(report: dict[str, Any]) -> str:
    lines = [f"embedder: {report['embedder']}  (questions without evidence skipped: {report['skipped_no_evidence']})"]
    header = f"{'mode':<7} {'category':<16} {'n':>4} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'Hit@5':>6} {'NDCG@10':>8}"
    lines.append(header)
    for mode, groups in report["modes"].items():
        for name, v in groups.items():
            if name.startswith("_"):
                continue
            lines.append(
                f"{mode:<7} {name:<16} {v['n']:>4} {v['R@1']:>6.3f} {v['R@5']:>6.3f} {v['R@10']:>6.3f} "
                f"{v['Hit@5']:>6.3f} {v['NDCG@10']:>8.3f}"
            )
        lines.append(f"{mode:<7} {groups['_ms_per_query']} ms per query (embedding included)")
    return "\n".join(lines)


def cmd_eval(args: argparse.Namespace) -> None:
    conversations = load_locomo(Path(args.path))
    if args.limit:
        conversations = conversations[: args.limit]
    with tempfile.TemporaryDirectory(prefix="capsule-eval-") as tmp:
        service = build_eval_service(args, Path(tmp))
        try:
            report = run_eval(service, conversations, modes=args.mode or MODES)
        finally:
            service.store.close()
    report["options"] = {k: getattr(service._options, k) for k in service._options.__dataclass_fields__}
    report["weights"] = {k: getattr(service.settings.weights, k) for k in ("vector", "bm25", "time", "feedback")}
    report["data"] = {
        "path": str(args.path),
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "questions": sum(len(c.questions) for c in conversations),
    }
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2) if args.json else render(report))


def register(subparsers) -> None:
    p = subparsers.add_parser("eval", help="retrieval benchmarks through the real service")
    sub = p.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    q = sub.add_parser("locomo", help="LoCoMo: each conversation a project, each question a search")
    q.add_argument("path", help="the LoCoMo JSON file (read in place; its licence forbids copying it)")
    q.add_argument("--mode", action="append", choices=MODES, help="only these modes (repeatable)")
    q.add_argument("--limit", type=int, help="only the first N conversations")
    q.add_argument("--embedder", choices=EMBEDDER_NAMES)
    q.add_argument("--cache", help="an SQLite file keeping embeddings between runs")
    q.add_argument(
        "--option",
        action="append",
        metavar="NAME=VALUE",
        help="override a search option, e.g. window=off or author_boost=0.1 (repeatable)",
    )
    q.add_argument("--out", help="also write the report as JSON here")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=cmd_eval)
    from . import evaluate_longmemeval  # imports this module: registered here, not at the top

    evaluate_longmemeval.register(sub)
    from . import evaluate_capture

    evaluate_capture.register(sub)


__all__ = ["normalise_evidence", "parse_session_date", "load_locomo", "scores", "run_eval", "register"]
