"""Making a cluster's search indexes ready, idempotently (``capsule cloud setup-atlas``).

Atlas builds a search index in the background: a ``$search`` or ``$vectorSearch`` on an index
that is not yet queryable answers nothing, silently. So the setup creates what is missing,
updates what differs, leaves what matches (a second run changes nothing), refuses a vector index
whose dimensions are not the embedder's (its vectors could never be compared with the query's),
and waits, reporting progress, until ``$listSearchIndexes`` says each index is ``queryable``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from ..core.errors import Conflict, Unavailable
from . import atlas_search
from . import mongo_vector as vs


def wanted_indexes(
    dimensions: int,
    *,
    vector_index: str,
    search_index: str = atlas_search.SEARCH_INDEX,
    quantization: str | None = None,
) -> list[dict[str, Any]]:
    """The two search indexes the hosted store queries."""
    return [
        vs.vector_index_definition(dimensions, name=vector_index, quantization=quantization),
        atlas_search.search_index_definition(name=search_index),
    ]


def ensure_search_indexes(
    memories: Any,
    wanted: Iterable[dict[str, Any]],
    *,
    wait_s: float = 600.0,
    poll_s: float = 5.0,
    progress: Callable[[str], None] = lambda line: None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, str]:
    """Each wanted index ``created``, ``updated`` or ``unchanged``; then, with ``wait_s``, wait
    until every one is queryable. Raises :class:`Conflict` for an index that cannot be made so
    in place (another type, other dimensions) and :class:`Unavailable` when the wait runs out."""
    from pymongo.operations import SearchIndexModel

    existing = {doc["name"]: doc for doc in memories.list_search_indexes()}
    done: dict[str, str] = {}
    for index in wanted:
        name, have = index["name"], existing.get(index["name"])
        if have is None:
            memories.create_search_index(
                SearchIndexModel(definition=index["definition"], name=name, type=index["type"])
            )
            done[name] = "created"
            continue
        _check_compatible(index, have)
        if _covers(index["definition"], have.get("latestDefinition") or {}):
            done[name] = "unchanged"
        else:
            memories.update_search_index(name, index["definition"])
            done[name] = "updated"
    for name, action in done.items():
        progress(f"{name}: {action}")
    if wait_s > 0:
        wait_queryable(memories, list(done), wait_s=wait_s, poll_s=poll_s, progress=progress, sleep=sleep, clock=clock)
    return done


def wait_queryable(
    memories: Any,
    names: list[str],
    *,
    wait_s: float,
    poll_s: float,
    progress: Callable[[str], None],
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> None:
    started = clock()
    while True:
        state = {doc["name"]: doc for doc in memories.list_search_indexes() if doc["name"] in names}
        failed = [n for n in names if state.get(n, {}).get("status") == "FAILED"]
        if failed:
            raise Unavailable(
                f"Atlas could not build the search index {failed[0]!r}: "
                f"{state[failed[0]].get('statusDetail') or 'see the cluster’s Atlas Search page'}"
            )
        waiting = [n for n in names if not state.get(n, {}).get("queryable")]
        elapsed = clock() - started
        progress(", ".join(f"{n}: {state.get(n, {}).get('status', 'PENDING')}" for n in names) + f" ({elapsed:.0f} s)")
        if not waiting:
            return
        if elapsed + poll_s > wait_s:
            raise Unavailable(
                f"the search indexes {', '.join(waiting)} are not queryable after {wait_s:.0f} s; "
                "Atlas keeps building them: run setup-atlas again to keep waiting"
            )
        sleep(poll_s)


def _vector_dimensions(definition: dict[str, Any]) -> int | None:
    return next((f.get("numDimensions") for f in definition.get("fields", []) if f.get("type") == "vector"), None)


def _check_compatible(want: dict[str, Any], have: dict[str, Any]) -> None:
    name = want["name"]
    if have.get("type", "search") != want["type"]:
        raise Conflict(
            f"the index {name!r} exists as a {have.get('type', 'search')!r} index, not "
            f"{want['type']!r}: drop it in Atlas, or name another index in the settings"
        )
    if want["type"] != "vectorSearch":
        return
    wanted, held = _vector_dimensions(want["definition"]), _vector_dimensions(have.get("latestDefinition") or {})
    if held is not None and held != wanted:
        raise Conflict(
            f"the vector index {name!r} holds {held}-dimension vectors but the embedder makes {wanted}: "
            "its memories' vectors cannot be searched with this embedder's queries. Keep the embedder "
            "the memories were made with, or set CAPSULE_MONGODB_VECTOR_INDEX to a new index "
            "(its memories then need this embedder's vectors)"
        )


def _covers(want: Any, have: Any) -> bool:
    """Whether ``have`` (Atlas's stored definition, with its defaults filled in) says everything
    ``want`` says. A vector index's fields are a set: Atlas may list them in another order."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _covers(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return False
        if all(isinstance(w, dict) and "path" in w for w in want):  # vectorSearch fields: by path
            held = {h.get("path"): h for h in have if isinstance(h, dict)}
            return all(w["path"] in held and _covers(w, held[w["path"]]) for w in want)
        return all(_covers(w, h) for w, h in zip(want, have))
    return want == have


def drop_old_text_indexes(memories: Any) -> list[str]:
    """Drop the classic ``$text`` indexes Atlas Search replaced: every write paid for them."""
    existing = memories.index_information()
    dropped = [name for name in vs.OLD_TEXT_INDEXES if name in existing]
    for name in dropped:
        memories.drop_index(name)
    return dropped
