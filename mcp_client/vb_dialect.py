"""Answering a Vector Bridge caller in its own contract (COMPAT §1), through our backend.

A call speaks the Vector Bridge's dialect when it uses one of its tools that we have no own
version of (solution_preview, solution_upsert, the credential helpers), or one of its argument
names that ours do not share (``project_root``, ``chunk_id``, ``error_message``, ...)
(:func:`speaks`). Such a call is checked by the original's rules (:mod:`.vb_args`), run on the
same backend as ours, and answered as the original answered: one text item, pretty-printed JSON
for memory_* tools and Markdown for the others (:mod:`.vb_markdown`), with the keys its callers
read (``success``, ``error``, ``message``, ``chunks``, ``results``, ``total``, ``project_id``).
Search and ingest answers also carry ``success``/``results``/``chunks`` beside the content, where
the original's unmodified hooks look for them (COMPAT §6). Everything else stays in our own
strict dialect; memory_projects and golden_paths, which its callers call with ``{}``, answer
everyone with the original's text (:func:`projects_json`, :func:`.vb_markdown.golden_paths`)
beside our structured result.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any

import anyio
from mcp.types import CallToolResult, TextContent
from pydantic import ConfigDict

from capsule.compat.vector_bridge import meta_as_sent, meta_request
from capsule.core import limits
from capsule.core.errors import CapsuleError, NotFound

from . import vb_markdown as md
from .tool_kit import ServerState, describe_error
from .vb_args import SPEC, BadArguments, checked, id_text

ONLY_THEIRS = frozenset({"solution_preview", "solution_upsert", "auto_setup_credentials", "save_credentials"})
# Argument names that only a Vector Bridge caller sends to a tool both of us have.
THEIR_NAMES = {
    "memory_ingest": {"project_root"},
    "memory_search": {"project_root", "global"},
    "memory_feedback": {"chunk_id"},
    "solution_search": {"error_message", "limit"},
    "pattern_detect": {"query_text", "limit"},
    "pattern_solutions": {"pattern_tag", "pattern_category", "limit"},
    "pattern_link": {"pattern_tag", "pattern_category"},
    "golden_paths": {"limit"},
}
SEARCH_CAP = 20  # the original: limit = min(k, 20)
CHUNK_UNITS = 200  # a search hit's chunk: its first 200 UTF-16 units, "..." when longer


def speaks(tool: str, arguments: Mapping[str, Any] | None) -> bool:
    """Whether this call is in the Vector Bridge's dialect (see the module doc)."""
    if tool in ONLY_THEIRS:
        return True
    if set(arguments or {}) & THEIR_NAMES.get(tool, set()):
        return True
    if tool in ("solution_apply", "pattern_link"):  # its ids are JSON numbers, ours strings
        return type((arguments or {}).get("solution_id")) is int
    return False


class Answer(CallToolResult):
    """A tool result that may carry fields beside its content (the hooks read them there)."""

    model_config = ConfigDict(extra="allow")


# The SDK shapes a tool result to the protocol's own fields, so fields beside the content are put
# back by a middleware around the call: the tool leaves them here, the middleware adds them.
_BESIDE: ContextVar[dict[str, Any] | None] = ContextVar("vector_bridge_beside", default=None)


async def beside_content(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
    """Server middleware: a Vector Bridge answer's ``success``/``results``/``chunks`` beside its content."""
    if ctx.method != "tools/call":
        return await call_next(ctx)
    holder: dict[str, Any] = {}
    token = _BESIDE.set(holder)
    try:
        result = await call_next(ctx)
    finally:
        _BESIDE.reset(token)
    if holder and isinstance(result, dict):
        return {**holder, **result}  # the protocol's own fields win
    return result


async def run(tool: str, arguments: Mapping[str, Any] | None, state: ServerState) -> CallToolResult:
    """:func:`call` off the event loop (the backend blocks), leaving the beside-fields for the middleware."""
    answer = await anyio.to_thread.run_sync(call, tool, arguments, state)
    holder = _BESIDE.get()
    if holder is not None and answer.model_extra:
        holder.update(answer.model_extra)
    return answer


def call(tool: str, arguments: Mapping[str, Any] | None, state: ServerState) -> CallToolResult:
    """Run one Vector Bridge call; never raises for what the caller sent or the backend said."""
    json_tool = tool.startswith("memory_") or tool in ("auto_setup_credentials", "save_credentials")
    try:
        args, unused = checked(tool, arguments)
    except BadArguments as exc:
        return _error(str(exc), is_error=True)
    try:
        return HANDLERS[tool](state, args, unused)
    except CapsuleError as exc:
        # Inside memory_* the original answered {success: false, error} without isError (COMPAT §1.1).
        return _error(describe_error(exc), is_error=not json_tool)


# ---- answers ------------------------------------------------------------------------


def _json(body: dict[str, Any], **beside: Any) -> CallToolResult:
    text = json.dumps(body, indent=2, ensure_ascii=False)
    return Answer(content=[TextContent(type="text", text=text)], **beside)


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _error(message: str, *, is_error: bool) -> CallToolResult:
    text = json.dumps({"success": False, "error": message}, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def _unused_note(unused: list[str]) -> str:
    return f"not used: {', '.join(unused)}" if unused else ""


def _with_note(text: str, unused: list[str]) -> str:
    return f"{text}\n\n_Arguments {_unused_note(unused)}_" if unused else text


# ---- memory tools (JSON) ----------------------------------------------------------


def memory_ingest(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    started = time.perf_counter()
    project, path, text = args["project_root"], args["path"], args["text"]
    if not text.strip():  # the original stored no chunk and still answered success
        return _json(
            {"success": True, "chunks": 0, "project_id": project, "message": f"Ingested 0 chunks from {path}"},
            success=True,
            chunks=0,
        )
    project = state.backend.unlimited_project(project)
    request = {"project": project, "text": text, "path": path, "meta": meta_request(args.get("meta") or {})}
    result = state.backend.ingest(request)
    chunks = len(result.ids) - len(result.deduplicated)
    message = f"Ingested {chunks} chunks from {path}"
    if result.evicted:
        message += f"; evicted {len(result.evicted)} to stay within the project's limit: {', '.join(result.evicted)}"
    if unused:
        message += f" ({_unused_note(unused)})"
    body = {"success": True, "chunks": chunks, "project_id": project, "message": message, "ids": result.ids}
    if result.evicted:
        body["evicted"] = result.evicted
    # The stop hook's timeout path looks for these words on stderr (COMPAT §1.3).
    marker = "All chunks were duplicates" if chunks == 0 else "Total ingestion time:"
    print(f"{marker} {1000 * (time.perf_counter() - started):.0f}ms", file=sys.stderr, flush=True)
    return _json(body, success=True, chunks=chunks)


def memory_search(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    query, root = args["query"], args["project_root"]
    if not query.strip():
        return _json({"success": False, "error": "Cannot embed empty text"}, success=False)
    k = args.get("k", 8)
    limit = min(math.floor(k), SEARCH_CAP) if math.isfinite(k) else SEARCH_CAP
    notes = [f"k {k} was clamped to {SEARCH_CAP}"] if k > SEARCH_CAP else []
    if unused:
        notes.append(_unused_note(unused))
    every = bool(args.get("global")) or root is None  # null names no project: search them all (COMPAT §5)
    if limit < 1:
        return _no_hits(notes)
    filters = {name: args[name] for name in ("component", "category") if name in args}
    request = {"query": query, "k": limit, "global": every, "filters": filters}
    if not every:
        request["project"] = root
    hits = state.backend.search(request).results
    if not hits:
        return _no_hits(notes)
    results = [_hit(hit, every) for hit in hits]
    body: dict[str, Any] = {"success": True, "results": results, "total": len(results)}
    if not every:
        body["project_id"] = root
    if notes:
        body["message"] = "; ".join(notes)
    return _json(body, success=True, results=results)


def _no_hits(notes: list[str]) -> CallToolResult:
    message = "; ".join(["No results found", *notes])
    return _json({"success": True, "results": [], "message": message}, success=True, results=[])


def _hit(hit: Any, every: bool) -> dict[str, Any]:
    c = hit.components
    meta = {
        **meta_as_sent(hit.meta),
        "chunk_id": hit.id,
        "vector_score": c.vector,
        "bm25_score": c.bm25,
        "time_score": c.time,
        "feedback_score": c.feedback,
        "outcome_bonus": c.outcome,
    }
    path = hit.path or ""
    if every:
        meta["project_root"] = hit.project
        path = f"{hit.project.rstrip('/')}/{path}" if path else hit.project
    return {"path": path, "chunk": chunk_preview(hit.content), "score": round(hit.score, 4), "meta": meta}


def chunk_preview(text: str) -> str:
    """The first 200 UTF-16 units of ``text``, "..." appended when it is longer (as the original)."""
    units = text.encode("utf-16-le")
    if len(units) <= 2 * CHUNK_UNITS:
        return text
    return units[: 2 * CHUNK_UNITS].decode("utf-16-le", errors="ignore") + "..."


def projects_json(found: list[Any]) -> str:
    """The original's memory_projects text: most recently active first (COMPAT §1.5)."""
    found = sorted(found, key=lambda p: p.last_activity.timestamp() if p.last_activity else 0.0, reverse=True)
    projects = [
        {
            "id": p.project,
            "root_path": getattr(p, "root_path", None) or p.project,
            "label": getattr(p, "label", None) or _label(p.project),
            "doc_count": p.memories,
        }
        for p in found
    ]
    return json.dumps({"success": True, "projects": projects, "total": len(projects)}, indent=2, ensure_ascii=False)


def _label(name: str) -> str:
    tail = name.rstrip("/").rsplit("/", 1)[-1]
    return tail or name


def memory_feedback(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    chunk = id_text(args["chunk_id"])
    request = {"helpful": args["helpful"], **({"context": args["context"]} if "context" in args else {})}
    state.backend.feedback(chunk, request)
    return _json({"success": True, "message": f"Feedback recorded for chunk {chunk}", "helpful": args["helpful"]})


def auto_setup_credentials(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    return _json(
        {
            "success": True,
            "message": (
                f"Capsule Memory is ready ({state.backend.name} mode): it needs no DATABASE_URL_MEMORY, REDIS_URL or "
                "OPENAI_API_KEY. Memories are kept by Capsule Memory's own store."
            ),
            "credentials": {name: "NOT NEEDED" for name in SPEC["save_credentials"]},
        }
    )


def save_credentials(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    # Writing secrets into a shell profile is what the original did; nothing here needs them.
    return _json(
        {
            "success": True,
            "saved": [],
            "config_file": None,
            "message": (
                "Nothing saved: Capsule Memory needs none of these credentials, and keeps secrets out of shell files."
            ),
        }
    )


# ---- solution, pattern and golden-path tools (Markdown) ----------------------------


def solution_search(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    limit = args.get("limit", 5)
    k = max(1, min(math.floor(limit), limits.MAX_K)) if math.isfinite(limit) else limits.MAX_K
    request = {
        "error": args["error_message"],
        "k": k,
        **{name: args[name] for name in ("category", "component") if name in args},
    }
    found = state.backend.solution_search(request).results
    text = md.solution_search(args["error_message"], found)
    if limit > limits.MAX_K:
        text += f"\n_limit {limit} was clamped to {limits.MAX_K}_"
    return _text(_with_note(text, unused))


def solution_preview(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    solution_id = id_text(args["solution_id"])
    try:
        solution = state.backend.get_solution(solution_id).solution
    except NotFound:
        return _text(md.not_found(solution_id))
    return _text(md.solution_preview(solution))


def solution_apply(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    solution_id = id_text(args["solution_id"])
    try:
        applied = state.backend.solution_apply(solution_id, {"success": args["success"]})
    except NotFound:
        return _text(md.not_found(solution_id) + " (nothing recorded)")
    return _text(md.solution_apply(applied.solution, args["success"]))


def solution_upsert(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    created = state.backend.new_solution_from_file(args)
    return _text(_with_note(md.solution_created(created.solution), unused))


def pattern_detect(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    limit = args.get("limit", 3)
    k = max(1, min(math.floor(limit), limits.MAX_K)) if math.isfinite(limit) else limits.MAX_K
    found = state.backend.pattern_detect({"error": args["query_text"], "k": k}).results
    return _text(_with_note(md.pattern_detect(found), unused))


def pattern_solutions(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    tag, category = args["pattern_tag"], args.get("pattern_category")
    limit = args.get("limit", 5)
    k = max(1, min(math.floor(limit), limits.MAX_K)) if math.isfinite(limit) else limits.MAX_K
    request = {"tag": tag, "k": k, **({"category": category} if category else {})}
    try:
        found = state.backend.pattern_solutions(request)
    except NotFound:
        return _text(md.pattern_solutions(tag, category, None))
    return _text(_with_note(md.pattern_solutions(tag, category, found), unused))


def pattern_link(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    solution_id = id_text(args["solution_id"])
    state.backend.pattern_link(
        {
            "tag": args["pattern_tag"],
            "category": args["pattern_category"],
            "solution_id": solution_id,
            "success": args["success"],
        }
    )
    return _text(md.pattern_link(args["pattern_tag"], solution_id, args["success"]))


def golden_paths(state: ServerState, args: dict[str, Any], unused: list[str]) -> CallToolResult:
    minimum = max(1, math.floor(args.get("min_applications", 3)))
    limit = args.get("limit", 20)
    k = max(1, min(math.floor(limit), limits.MAX_PAGE)) if math.isfinite(limit) else limits.MAX_PAGE
    paths = state.backend.golden_paths({"min_applications": minimum, "k": k}).paths
    return _text(_with_note(md.golden_paths(paths, minimum), unused))


HANDLERS: dict[str, Callable[[ServerState, dict[str, Any], list[str]], CallToolResult]] = {
    "memory_ingest": memory_ingest,
    "memory_search": memory_search,
    "memory_feedback": memory_feedback,
    "solution_search": solution_search,
    "solution_preview": solution_preview,
    "solution_apply": solution_apply,
    "solution_upsert": solution_upsert,
    "pattern_detect": pattern_detect,
    "pattern_solutions": pattern_solutions,
    "pattern_link": pattern_link,
    "golden_paths": golden_paths,
    "auto_setup_credentials": auto_setup_credentials,
    "save_credentials": save_credentials,
}

__all__ = ["speaks", "call", "run", "beside_content", "projects_json", "chunk_preview", "ONLY_THEIRS", "HANDLERS"]
