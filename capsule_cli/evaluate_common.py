"""What the retrieval evals share (``capsule eval locomo`` and ``capsule eval longmemeval``): the
service a run searches, storing a dataset's turns in order, pre-warming the embedder, the scores."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from capsule import InvalidInput

TENANT = "eval"
MODES = ("hybrid", "vector", "bm25")


def scores(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    wanted = set(relevant)
    found = [i for i, dia in enumerate(ranked[:10]) if dia in wanted]

    def recall(k: int) -> float:
        return len({ranked[i] for i in found if i < k}) / len(wanted)

    dcg = sum(1 / math.log2(i + 2) for i in found)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(wanted), 10)))
    return {
        "R@1": recall(1),
        "R@5": recall(5),
        "R@10": recall(10),
        "Hit@5": float(any(i < 5 for i in found)),
        "NDCG@10": dcg / ideal,
    }


def prewarm(service, projects: Iterable[Iterable[tuple[str, str]]], queries: Iterable[str], batch: int = 256) -> None:
    """Embed, in large batches, what storing each project's (content, session) turns one by one
    will ask for (each turn as :mod:`capsule.service.context` embeds it) and the queries, so the
    embedder's cache answers those calls: the model then runs once per batch, not per turn."""
    from capsule.service.context import embedding_text

    words = service.settings.session_context_words
    texts: dict[str, None] = {}
    for turns in projects:
        before: dict[str, str] = {}
        for content, session in turns:
            texts[embedding_text(content, before.get(session), max_words=words)] = None
            before[session] = content
    todo = list(texts)
    for start in range(0, len(todo), batch):
        service.embedder.embed(todo[start : start + batch])
    service.embedder.embed(list(dict.fromkeys(queries)), kind="query")


def store_turns(
    service, project: str, turns: Iterable[Any], source: str, key_of: Callable[[Any], str]
) -> dict[str, str]:
    """Store a project's turns (content, occurred_at, author, session) in order; returns memory
    id -> the turn's key in its dataset (``source`` names the dataset in each memory's meta)."""
    ids: dict[str, str] = {}
    for turn in turns:
        key = key_of(turn)
        result = service.store_memory(
            TENANT,
            {
                "project": project,
                "content": turn.content,
                "occurred_at": turn.occurred_at,
                "meta": {"author": turn.author, "session": turn.session, "source": f"{source} {key}"},
            },
        )
        ids[result.memory.id] = key
    return ids


def build_eval_service(args: argparse.Namespace, data_dir: Path):
    from capsule.config import Settings
    from capsule.embedders import build_embedder
    from capsule.embedders.cached import CachedEmbedder
    from capsule.service.memory_service import MemoryService
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
            raise InvalidInput(
                f"no search option {name!r}; options: {', '.join(options.__dataclass_fields__)}", field="option"
            )
        kind = type(getattr(options, name))
        changes[name] = (value.lower() in ("1", "true", "yes", "on")) if kind is bool else kind(value)
    return replace(options, **changes)
