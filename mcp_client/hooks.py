"""``capsule hook stop|post-compact|pre-tool-use``: Claude Code hook commands.

Each reads the hook's JSON on stdin and fails open: whatever goes wrong, the command prints
one line to stderr and exits 0, so a hook never blocks the agent. They talk to the same
memory as ``capsule mcp`` (embedded, or ``CAPSULE_MEMORY_URL``), with short timeouts; while
it is unreachable, writes wait in a spool (:mod:`mcp_client.spool`) for the next run. Each
write is kept there before it is sent, so a run Claude Code ends at its timeout loses nothing.
Embedded, a running ``capsule serve`` of the same data folder answers instead of the store
(:mod:`mcp_client.local_server`): it has the embedding model loaded, and this module imports
nothing heavy until a run needs the store itself (each hook imports what it uses: pre-tool-use
neither the transcript parsers nor the spool's secret guard).

- ``stop`` stores each DIGEST block of the session transcript (format: :mod:`mcp_client.digest`),
  with agent, task id and outcome status in the metadata, and the Vector Bridge's newest JSON
  DIGEST as its own hooks ingested it (:mod:`mcp_client.vb_digest`). Re-running it is harmless:
  the same digest within 48 hours is stored once. Besides its stderr line, it tells the user what
  it stored, or why a digest was not stored, as the Stop hook's ``systemMessage`` on stdout
  (Claude Code shows it after the turn); it stays quiet when there is nothing new.
- ``post-compact`` stores the compaction summary, with the outcome inferred from its words.
- ``pre-tool-use`` searches memory before a Task (subagent) call and answers with the top
  results as compact bullets in ``hookSpecificOutput.additionalContext``, only for hits
  scoring at least ``--min-score`` (default 0.25) and within ``--max-chars``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from capsule.core import limits
from capsule.core.errors import CapsuleError
from capsule.core.paths import data_dir_from

from . import local_server
from .bounded import excerpt
from .options import connection_from, connection_options
from .project_name import default_project
from .spool import RETRYABLE, Spool, send

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and dataclasses are start-up costs pre-tool-use does not pay
    from collections.abc import Callable, Mapping
    from typing import Any, TextIO

    from .backends import Backend
    from .digest import Digest

TASK_TOOLS = {"Task", "Agent"}  # the subagent tool; newer Claude Code versions call it Agent
DEFAULT_MIN_SCORE = 0.25
DEFAULT_MAX_CHARS = 1200
HOOK_TIMEOUT_S = 5.0


class HookSkipped(Exception):
    """Nothing to do for this input (not an error: reported on stderr, exit 0)."""


class HookContext:
    def __init__(
        self,
        backend: Callable[[], Backend],
        project: str,
        environ: Mapping[str, str],
        spool: Spool | None = None,
        spooled: int = 0,
        down: bool = False,
    ) -> None:
        self.backend = backend  # opened only when there is work, so a no-op hook stays instant
        self.project = project
        self.environ = environ
        self.spool = spool  # where writes wait while the memory is unreachable
        self.spooled = spooled
        self.down = down  # after one failure, keep the rest at once: the hook stays fast
        self.delivered = 0  # writes of earlier runs this run delivered (:func:`_finish`)

    def keep(self, kind: str, request: dict[str, Any]) -> Path | None:
        """Put a write in the spool before sending it (:meth:`write`): a run ended mid-send,
        or before it reached this write, loses nothing."""
        return None if self.spool is None else self.spool.put(kind, request, inflight=True)

    def write(self, kind: str, request: dict[str, Any], kept: Path | None = None) -> Any:
        """Store or ingest now; while the memory is unreachable, keep it in the spool (None).
        The request is in the spool while it is sent (``kept``, else put there now)."""
        if self.spool is None:
            return send(self.backend(), kind, request)
        kept = kept or self.keep(kind, request)
        assert kept is not None
        if self.down:
            self.spool.release(kept)
            self.spooled += 1
            return None
        try:
            result = send(self.backend(), kind, request)
        except RETRYABLE:
            self.down = True
            self.spool.release(kept)
            self.spooled += 1
            return None
        except CapsuleError:  # refused (invalid, too large): retrying cannot help
            self.spool.done(kept)
            raise
        except BaseException:
            self.spool.release(kept)
            raise
        self.spool.done(kept)
        return result

    def drain(self) -> int:
        """Deliver what earlier runs kept (bounded, so the hook stays fast)."""
        if self.spool is None or self.down or not self.spool.pending():
            return 0
        try:
            delivered, _ = self.spool.drain(self.backend())
        except RETRYABLE:
            return 0
        return delivered


def project_of(payload: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    # The checkout Claude Code runs in, named by the rule the CLI and the MCP server use (its
    # canonical full path, as the Vector Bridge's hooks named it: one checkout, one project).
    # CLAUDE_PROJECT_DIR first, as those hooks read it, then the payload's cwd.
    cwd = environ.get("CLAUDE_PROJECT_DIR") or payload.get("cwd")
    return default_project(environ, cwd if isinstance(cwd, str) and cwd else None)


# ---- stop -----------------------------------------------------------------------------------


def digest_request(digest: Digest, payload: Mapping[str, Any], ctx: HookContext) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "type": "digest",
        "outcome_status": digest.status,
        "source": "claude-code:stop",
        "tags": ["digest"],
        "author": digest.agent or payload.get("agent_type") or ctx.environ.get("CAPSULE_AGENT") or "claude-code",
    }
    task = digest.task or ctx.environ.get("CAPSULE_TASK_ID")
    if task:
        meta["task_id"] = task[:256]
    if payload.get("session_id"):
        meta["session"] = str(payload["session_id"])[:256]
    files = digest.sections.get("files")
    if files:
        meta["files"] = [f[: limits.MAX_PATH_CHARS] for f in files[:50]]
    return {"project": ctx.project, "content": digest.text, "meta": meta}


def hook_stop(payload: Mapping[str, Any], ctx: HookContext) -> dict[str, Any]:
    """Store the session's digests: every block of ours, and the Vector Bridge's newest JSON
    DIGEST (COMPAT §3.3: its text, path and meta as its hooks ingested them). Returns the report
    :func:`stop_line` and :func:`stop_message` put into words."""
    from . import hook_capture
    from .vb_digest import first_block, payload_text

    path = payload.get("transcript_path")
    said = first_block(payload_text(payload))  # the Stop payload's own text is looked at first
    if hook_capture.capture_mode(ctx.environ) != "off":
        if not path:
            raise HookSkipped("no transcript_path in the hook input")
        session = str(payload["session_id"]) if payload.get("session_id") else None
        return capture_events(hook_capture.transcript_events(path, session), ctx)
    if not path and said is None:
        raise HookSkipped("no transcript_path (and no DIGEST in the hook input's text)")
    try:
        ours, newest = _session(path)
    except OSError:  # an unreadable transcript; the payload's own DIGEST is stored all the same
        if said is None or said.digest is None:
            raise
        ours, newest = _session(None)
    report: dict[str, Any] = {
        "digests": len(ours),
        "stored": 0,
        "deduplicated": 0,
        "tasks": [],
        "kept": 0,
        "skipped": [],
        "refused": [],
        "unread": [],
    }
    # (kind, request, task, fresh): a refusal of a Vector Bridge digest of an earlier turn was told then
    writes = [(*_digest_write(digest_request(digest, payload, ctx)), digest.task, True) for digest in ours]
    if said is not None and said.digest is not None:
        vb, fresh = said.digest, True
    else:
        vb, fresh = newest.digest, newest.fresh
        report["unread"] = list(dict.fromkeys([*([said.error] if said and said.error else []), *newest.fresh_errors()]))
    if vb is not None:
        report["digests"] += 1
        write = _vb_write(vb, fresh, payload, ctx, report)
        if write is not None:
            writes.append(write)
    kept = [ctx.keep(kind, request) for kind, request, _, _ in writes]  # all of them, before the first is sent
    for (kind, request, task, fresh), kept_path in zip(writes, kept):
        try:
            result = ctx.write(kind, request, kept_path)
        except CapsuleError as exc:  # refused as invalid or too large: say so, and store the rest
            report["refused"].append((task, exc.message, fresh))
            continue
        if result is None:
            report["kept"] += 1
        elif (len(result.deduplicated) < result.chunks) if kind == "ingest" else not result.deduplicated:
            report["stored"] += 1
            report["tasks"].append(task)
        else:
            report["deduplicated"] += 1
    return report


def _session(path: Any) -> tuple[list[Digest], Any]:
    from .digest import session_digests
    from .vb_digest import Latest

    return session_digests(path) if path else ([], Latest())


def vb_project_root(payload: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    # The original's PROJECT_ROOT (CLAUDE_PROJECT_DIR, else the folder the hook runs in), which
    # its digest meta names as project_root / project_name / project_id_hash.
    cwd = payload.get("cwd")
    return environ.get("CLAUDE_PROJECT_DIR") or (cwd if isinstance(cwd, str) and cwd else os.getcwd())


def _vb_write(
    digest: dict[str, Any], fresh: bool, payload: Mapping[str, Any], ctx: HookContext, report: dict[str, Any]
) -> tuple[str, dict[str, Any], str, bool] | None:
    """The ingest a Vector Bridge DIGEST becomes, or None with the reason in the report: a quality
    gate (the original retried those until they were dead-lettered; reported once here, when the
    digest is of this turn) or a meta our store cannot hold."""
    from capsule.compat.vector_bridge import meta_request

    from .vb_digest import Skip, prepare, task_label

    try:
        prepared = prepare(digest, vb_project_root(payload, ctx.environ))
        meta = meta_request(prepared.meta)  # kept as sent; our reading of outcome_status beside it
    except Skip as skip:
        report["skipped"].append((task_label(digest), skip.reason, skip.message, fresh))
        return None
    except CapsuleError as exc:
        report["refused"].append((task_label(digest), exc.message, fresh))
        return None
    request = {"project": ctx.project, "text": prepared.text, "path": prepared.path, "meta": meta}
    return "ingest", request, prepared.task, fresh


def stop_line(report: Mapping[str, Any]) -> str:
    """The stop hook's stderr line: every count, and each digest not stored with its reason."""
    line = (
        f"capsule hook stop: {report['digests']} digest(s), {report['stored']} stored,"
        f" {report['deduplicated']} already stored"
    )
    for task, reason, message, _ in report["skipped"]:
        line += f"; task {task} not stored: {message} ({reason})"
    for task, message, _ in report["refused"]:
        line += f"; task {task or 'untagged'} refused: {message}"
    for why in report["unread"]:
        line += f"; a DIGEST block was not read: {why}"
    return line


def stop_message(report: Mapping[str, Any], ctx: HookContext) -> str | None:
    """What Claude Code shows the user after the turn (a Stop hook's ``systemMessage``): what was
    stored, or why not. Quiet when there is nothing new to say: Stop runs after every turn, and a
    digest already stored, or a Vector Bridge digest of an earlier turn stopped by a gate or refused,
    was reported then."""
    parts = []
    if report["stored"]:
        n, tasks = report["stored"], [t for t in report["tasks"] if t]
        named = f" ({'task' if len(tasks) == 1 else 'tasks'} {', '.join(tasks)})" if tasks else ""
        parts.append(f"stored {n} digest{'s' if n != 1 else ''}{named} in {ctx.project}")
    for task, reason, message, fresh in report["skipped"]:
        if fresh:
            parts.append(f"did not store the DIGEST of task {task}: {message} ({reason})")
    for task, message, fresh in report["refused"]:
        if fresh:
            parts.append(f"the memory refused the digest of task {task or 'untagged'}: {message}")
    parts += [f"a DIGEST block was not read: {why}" for why in report["unread"]]
    if report["kept"]:
        parts.append(f"memory unreachable: {report['kept']} digest(s) kept, to be stored by the next hook run")
    if ctx.delivered and parts:
        parts.append(f"delivered {ctx.delivered} write(s) kept by earlier runs")
    return "Capsule: " + "; ".join(parts) if parts else None


def _digest_write(request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A digest too long for one memory is ingested (chunked) instead."""
    if len(request["content"].encode("utf-8")) > limits.MAX_CONTENT_BYTES:
        return "ingest", {"project": request["project"], "text": request["content"], "meta": request["meta"]}
    return "store", request


# ---- post-compact ---------------------------------------------------------------------------


def capture_events(events: Any, ctx: HookContext) -> dict[str, Any]:
    """Send events to capture (CAPSULE_HOOK_CAPTURE), in batches; kept in the spool while unreachable."""
    from . import hook_capture

    mode = hook_capture.capture_mode(ctx.environ)
    report = {"events": 0, "candidates": 0, "approved": 0, "skipped": 0}
    for batch in hook_capture.batches(iter(events)):
        report["events"] += len(batch)
        result = ctx.write("capture", hook_capture.capture_request(ctx.project, batch, mode))
        if result is not None:
            report["candidates"] += len(result.candidates)
            report["approved"] += len(result.approved)
            report["skipped"] += len(result.skipped)
    return report


def hook_post_compact(payload: Mapping[str, Any], ctx: HookContext) -> dict[str, Any]:
    from . import hook_capture
    from .digest import infer_outcome, last_compact_summary

    summary = payload.get("compact_summary") or payload.get("summary")
    if not summary and payload.get("transcript_path"):
        summary = last_compact_summary(payload["transcript_path"])
    if not isinstance(summary, str) or not summary.strip():
        raise HookSkipped("no compaction summary in the hook input or the transcript")
    if hook_capture.capture_mode(ctx.environ) != "off":
        event = {"role": "assistant", "text": summary[: hook_capture.MAX_EVENT_CHARS]}
        if payload.get("session_id"):
            event["session"] = str(payload["session_id"])[:256]
        return capture_events([event], ctx)
    outcome = infer_outcome(summary)
    meta: dict[str, Any] = {
        "type": "compaction-summary",
        "outcome_status": outcome,
        "source": "claude-code:post-compact",
        "tags": ["compaction"],
        "author": payload.get("agent_type") or ctx.environ.get("CAPSULE_AGENT") or "claude-code",
    }
    if payload.get("session_id"):
        meta["session"] = str(payload["session_id"])[:256]
    if payload.get("trigger") in ("manual", "auto"):
        meta["tags"].append(f"compaction-{payload['trigger']}")
    if ctx.environ.get("CAPSULE_TASK_ID"):
        meta["task_id"] = ctx.environ["CAPSULE_TASK_ID"][:256]
    result = ctx.write(
        "ingest", {"project": ctx.project, "text": summary[: limits.MAX_INGEST_BYTES // 2], "meta": meta}
    )
    return {"chunks": result.chunks if result else 0, "outcome": outcome}


# ---- pre-tool-use ---------------------------------------------------------------------------


def task_query(tool_input: Mapping[str, Any]) -> str:
    parts = [tool_input.get(k) for k in ("description", "prompt")]
    text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
    return text[:2000]


def hook_pre_tool_use(
    payload: Mapping[str, Any],
    ctx: HookContext,
    *,
    min_score: float = DEFAULT_MIN_SCORE,
    max_chars: int = DEFAULT_MAX_CHARS,
    k: int = 3,
) -> dict[str, Any] | None:
    """The hook's JSON answer with the memories to inject, or None to add nothing."""
    if payload.get("tool_name") not in TASK_TOOLS:
        return None
    query = task_query(payload.get("tool_input") or {})
    if not query:
        return None
    found = ctx.backend().search({"project": ctx.project, "query": query, "k": k})
    header = "Relevant memories (Capsule Memory; ids for memory_feedback):"
    lines: list[str] = []
    used = len(header)
    for hit in found.results:
        if hit.score < min_score:
            continue
        suffix = f" [{hit.score:.2f}, {hit.id}]"
        room = min(300, max_chars - used - 1 - len("- ") - len(suffix))
        if room < 40:  # too little left for a useful excerpt: the budget is spent
            break
        text, _ = excerpt(" ".join(hit.content.split()), room)
        line = f"- {text}{suffix}"
        lines.append(line)
        used += len(line) + 1
    if not lines:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "\n".join([header, *lines])}}


# ---- the command ----------------------------------------------------------------------------


def run_hook(
    name: str,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    *,
    open_backend: Callable[[], Backend],
    environ: Mapping[str, str],
    min_score: float = DEFAULT_MIN_SCORE,
    max_chars: int = DEFAULT_MAX_CHARS,
    spool: Spool | None = None,
) -> int:
    """Run one hook; always returns 0 (fail open), reporting problems on ``stderr``."""
    backend: Backend | None = None

    def lazy_backend() -> Backend:
        nonlocal backend
        if backend is None:
            backend = open_backend()
        return backend

    try:
        payload = json.loads(stdin.read() or "{}")
        if not isinstance(payload, dict):
            raise HookSkipped("the hook input is not a JSON object")
        ctx = HookContext(backend=lazy_backend, project=project_of(payload, environ), environ=environ, spool=spool)
        if name == "stop":
            report = hook_stop(payload, ctx)
            if "candidates" in report:
                print(_capture_line(name, report) + _finish(ctx), file=stderr)
                return 0
            print(stop_line(report) + _finish(ctx), file=stderr)
            message = stop_message(report, ctx)
            if message:  # shown to the user by Claude Code; exit 0 all the same
                stdout.write(json.dumps({"systemMessage": message}))
                stdout.flush()
        elif name == "post-compact":
            report = hook_post_compact(payload, ctx)
            if "candidates" in report:
                print(_capture_line(name, report) + _finish(ctx), file=stderr)
                return 0
            print(
                f"capsule hook post-compact: summary of outcome {report['outcome']}, {report['chunks']} chunk(s)"
                " stored" + _finish(ctx),
                file=stderr,
            )
        else:
            answer = hook_pre_tool_use(payload, ctx, min_score=min_score, max_chars=max_chars)
            if answer:
                stdout.write(json.dumps(answer))
                stdout.flush()
    except HookSkipped as exc:
        print(f"capsule hook {name}: skipped: {exc}", file=stderr)
    except Exception as exc:  # noqa: BLE001 - a hook must never block the agent: fail open
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        print(f"capsule hook {name}: error (ignored): {message}", file=stderr)
    finally:
        if backend is not None:
            try:
                backend.close()
            except Exception:  # noqa: BLE001 - closing is best effort; the work is done
                pass
    return 0


def _capture_line(name: str, report: Mapping[str, Any]) -> str:
    from . import hook_capture

    return hook_capture.report_line(name, report)


def _finish(ctx: HookContext) -> str:
    """Deliver earlier kept writes now that this run's own are done; say what happened."""
    if ctx.spooled:
        return f"; memory unreachable: {ctx.spooled} write(s) kept for the next run"
    delivered = ctx.delivered = ctx.drain()
    return f"; delivered {delivered} write(s) kept by earlier runs" if delivered else ""


def spool_for(data_dir: str | None, environ: Mapping[str, str]) -> Spool:
    return Spool(data_dir_from(environ, data_dir) / "hook-spool")


def backend_opener(args: argparse.Namespace) -> Callable[[], Backend]:
    """The backend the options name (a URL, else the store itself), with the hooks' timeouts."""
    from .backends import Connection, open_backend

    conn = connection_from(args)
    conn = Connection(**{**conn.__dict__, "timeout_s": HOOK_TIMEOUT_S, "attempts": 2})
    return lambda: open_backend(conn)


def _opener(args: argparse.Namespace, environ: Mapping[str, str]) -> Callable[[], Backend]:
    """How this run reaches the memory: the URL given; else the running capsule serve of the
    data folder, falling back to the store itself when it does not answer; else the store."""
    remote = args.url or (None if args.embedded else environ.get("CAPSULE_MEMORY_URL"))
    server = None if remote else local_server.find(environ, data_dir=args.data_dir, embedder=args.embedder)
    if server is None:
        return backend_opener(args)
    return lambda: local_server.ServerBackend(server, fallback=lambda: backend_opener(args)())


def cmd_hook(args: argparse.Namespace) -> None:
    try:
        opener = _opener(args, os.environ)
        spool = spool_for(args.data_dir, os.environ)
    except Exception as exc:  # noqa: BLE001 - bad settings must not block the agent either
        print(f"capsule hook {args.hook}: error (ignored): {getattr(exc, 'message', exc)}", file=sys.stderr)
        return
    run_hook(
        args.hook,
        sys.stdin,
        sys.stdout,
        sys.stderr,
        open_backend=opener,
        environ=os.environ,
        min_score=_min_score(args.min_score, os.environ),
        max_chars=args.max_chars,
        spool=spool,
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("hook", help="Claude Code hook commands (read the hook JSON on stdin; never block)")
    p.add_argument("hook", choices=["stop", "post-compact", "pre-tool-use"])
    connection_options(p)
    p.add_argument(
        "--min-score",
        type=float,
        help="pre-tool-use: inject only hits scoring at least this "
        f"(default CAPSULE_HOOK_MIN_SCORE, else {DEFAULT_MIN_SCORE})",
    )
    p.add_argument(
        "--max-chars",
        type=int,
        default=DEFAULT_MAX_CHARS,
        help=f"pre-tool-use: size budget of the injected text (default {DEFAULT_MAX_CHARS})",
    )
    p.set_defaults(run=cmd_hook)
    p.error = _fail_open_usage  # a usage error exits 0 too: exit 2 would block the tool call


def _fail_open_usage(message: str) -> None:
    print(f"capsule hook: usage error (ignored): {message}", file=sys.stderr)
    raise SystemExit(0)


def _min_score(given: float | None, environ: Mapping[str, str]) -> float:
    if given is not None:
        return given
    try:
        return float(environ.get("CAPSULE_HOOK_MIN_SCORE") or DEFAULT_MIN_SCORE)
    except ValueError:
        return DEFAULT_MIN_SCORE


__all__ = ["run_hook", "hook_stop", "hook_post_compact", "hook_pre_tool_use", "HookContext", "register"]
