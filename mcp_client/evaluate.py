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
import math
import re
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from capsule import InvalidInput

TENANT = "eval"
MODES = ("hybrid", "vector", "bm25")
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
            return datetime.strptime(cleaned, pattern).replace(tzinfo=timezone.utc)
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
    sessions = sorted((int(m.group(1)), key) for key in dialog
                      if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(dialog[key], list))
    for session, key in sessions:
        date_text = dialog.get(f"{key}_date_time", "")
        when = parse_session_date(date_text)
        for offset, turn in enumerate(dialog[key]):
            text = str(turn.get("text", "")).strip()
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            conv.turns.append(Turn(
                dia_id=normalise_evidence([turn.get("dia_id", "")])[0] if turn.get("dia_id") else f"D{session}:{offset + 1}",
                content=f"[{date_text}] {turn.get('speaker', '?')}: {text}", author=str(turn.get("speaker", "")),
                session=f"session {session}", occurred_at=when + timedelta(seconds=offset),
            ))
    for qa in sample.get("qa") or []:
        conv.questions.append(Question(str(qa.get("question", "")), int(qa.get("category", 0)),
                                       normalise_evidence(qa.get("evidence", []))))
    return conv


# ---- metrics ------------------------------------------------------------------


def scores(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    wanted = set(relevant)
    found = [i for i, dia in enumerate(ranked[:10]) if dia in wanted]

    def recall(k: int) -> float:
        return len({ranked[i] for i in found if i < k}) / len(wanted)

    dcg = sum(1 / math.log2(i + 2) for i in found)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(wanted), 10)))
    return {"R@1": recall(1), "R@5": recall(5), "R@10": recall(10), "Hit@5": float(any(i < 5 for i in found)),
            "NDCG@10": dcg / ideal}


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


def prewarm(service, projects: Iterable[Iterable[tuple[str, str]]], queries: Iterable[str],
            batch: int = 256) -> None:
    """Embed, in large batches, what storing each project's (content, session) turns one by one
    will ask for (each turn as :mod:`capsule.context` embeds it) and the queries, so the
    embedder's cache answers those calls: the model then runs once per batch, not per turn."""
    from capsule.context import embedding_text

    words = service.settings.session_context_words
    texts: dict[str, None] = {}
    for turns in projects:
        before: dict[str, str] = {}
        for content, session in turns:
            texts[embedding_text(content, before.get(session), max_words=words)] = None
            before[session] = content
    todo = list(texts)
    for start in range(0, len(todo), batch):
        service.embedder.embed(todo[start:start + batch])
    service.embedder.embed(list(dict.fromkeys(queries)), kind="query")


def load_into(service, conversations: list[Conversation]) -> dict[str, str]:
    """Store every turn in order (each is embedded with the turn before it, as a live chat
    would be: see capsule.context); returns memory id -> dia id."""
    prewarm(service, ([(t.content, t.session) for t in c.turns] for c in conversations),
            (q.text[:8000] or "?" for c in conversations for q in c.questions if q.evidence))
    dia_of: dict[str, str] = {}
    for conv in conversations:
        dia_of.update(store_turns(service, conv.sample_id, conv.turns, "locomo", lambda turn: turn.dia_id))
    return dia_of


def store_turns(service, project: str, turns: Iterable[Any], source: str,
                key_of: Callable[[Any], str]) -> dict[str, str]:
    """Store a project's turns (content, occurred_at, author, session) in order; returns memory
    id -> the turn's key in its dataset (``source`` names the dataset in each memory's meta)."""
    ids: dict[str, str] = {}
    for turn in turns:
        key = key_of(turn)
        result = service.store_memory(TENANT, {
            "project": project, "content": turn.content, "occurred_at": turn.occurred_at,
            "meta": {"author": turn.author, "session": turn.session, "source": f"{source} {key}"},
        })
        ids[result.memory.id] = key
    return ids


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
            result = service.search(TENANT, {"project": conv.sample_id, "query": question.text[:8000] or "?",
                                             "k": k, "mode": mode})
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
            lines.append(f"{mode:<7} {name:<16} {v['n']:>4} {v['R@1']:>6.3f} {v['R@5']:>6.3f} {v['R@10']:>6.3f} "
                         f"{v['Hit@5']:>6.3f} {v['NDCG@10']:>8.3f}")
        lines.append(f"{mode:<7} {groups['_ms_per_query']} ms per query (embedding included)")
    return "\n".join(lines)


def build_eval_service(args: argparse.Namespace, data_dir: Path):
    from capsule.config import Settings
    from capsule.embedders import build_embedder
    from capsule.embedders.cached import CachedEmbedder
    from capsule.service import MemoryService
    from capsule.store.sqlite import SQLiteStore

    settings = Settings.from_env(data_dir=data_dir, embedder=args.embedder, retention_limit=1_000_000)
    store = SQLiteStore(data_dir / "capsule.db")
    store.migrate()
    cache = store
    if args.cache:
        cache = SQLiteStore(args.cache)
        cache.migrate()
    embedder = CachedEmbedder(build_embedder(settings), cache)
    service = MemoryService(store, embedder, settings=settings)
    service._options = with_options(service._options, args.option or [])
    return service


def with_options(options, items: list[str]):
    """Search options overridden by ``NAME=VALUE`` items (for measuring each ranking aid)."""
    changes: dict[str, Any] = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in options.__dataclass_fields__:
            raise InvalidInput(f"no search option {name!r}; options: {', '.join(options.__dataclass_fields__)}",
                               field="option")
        kind = type(getattr(options, name))
        changes[name] = (value.lower() in ("1", "true", "yes", "on")) if kind is bool else kind(value)
    return replace(options, **changes)


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
    report["data"] = {"path": str(args.path), "conversations": len(conversations),
                      "turns": sum(len(c.turns) for c in conversations),
                      "questions": sum(len(c.questions) for c in conversations)}
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
    q.add_argument("--embedder", choices=["auto", "minilm", "hashing", "voyage", "openai"])
    q.add_argument("--cache", help="an SQLite file keeping embeddings between runs")
    q.add_argument("--option", action="append", metavar="NAME=VALUE",
                   help="override a search option, e.g. window=off or author_boost=0.1 (repeatable)")
    q.add_argument("--out", help="also write the report as JSON here")
    q.add_argument("--json", action="store_true")
    q.set_defaults(run=cmd_eval)
    from . import evaluate_longmemeval  # imports this module: registered here, not at the top

    evaluate_longmemeval.register(sub)
    from . import evaluate_capture

    evaluate_capture.register(sub)


__all__ = ["normalise_evidence", "parse_session_date", "load_locomo", "scores", "run_eval", "register"]
