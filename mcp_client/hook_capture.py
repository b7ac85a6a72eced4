"""The ``stop`` and ``post-compact`` hooks in capture mode: the transcript goes to capture
(candidates queued for a person, or approved at the project's threshold) instead of being
stored directly.

The setting: ``CAPSULE_HOOK_CAPTURE`` = ``off`` (default: store digests and summaries as
before), ``queue`` (capture; every candidate waits for approval) or ``auto`` (capture and
approve at once those at or above the project's threshold).
"""

from __future__ import annotations

from capsule.core import limits

from .digest import _texts, read_transcript

TYPE_CHECKING = False
if TYPE_CHECKING:  # the stop hook imports this module; typing is a start-up cost it need not pay
    from collections.abc import Iterator, Mapping
    from typing import Any

# capsule.capture.models.MAX_EVENT_CHARS, read without importing pydantic (the hooks start fast).
MAX_EVENT_CHARS = limits.MAX_CONTENT_BYTES


MODES = ("off", "queue", "auto")
BATCH_EVENTS = 100  # events per capture request: well under the body limit
BATCH_CHARS = 512 * 1024


def capture_mode(environ: Mapping[str, str]) -> str:
    """The hook's capture setting (an unknown value is 'off': a hook never fails on a setting)."""
    mode = (environ.get("CAPSULE_HOOK_CAPTURE") or "off").strip().lower()
    return mode if mode in MODES else "off"


def _time(entry: Mapping[str, Any]) -> str | None:
    stamp = entry.get("timestamp")
    if not isinstance(stamp, str):
        return None
    from datetime import datetime  # capture mode only

    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.isoformat() if when.tzinfo else None


def transcript_events(path: str, session: str | None) -> Iterator[dict[str, Any]]:
    """The transcript's user and assistant messages as capture events (tool results on the user
    turn that carries them)."""
    for entry in read_transcript(path):
        message = entry.get("message")
        if not isinstance(message, dict) or entry.get("isCompactSummary"):
            continue
        role = message.get("role") or entry.get("type")
        if role not in ("user", "assistant"):
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        tools = [
            t
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "tool_result"
            for t in _texts(b.get("content"))
        ]
        own = (
            [content]
            if isinstance(content, str)
            else [
                b["text"]
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
            ]
        )
        text = "\n".join(t for t in own if t.strip())
        if not text.strip() and tools:
            role, text, tools = "tool", "\n".join(tools), []
        if not text.strip():
            continue
        event: dict[str, Any] = {"role": role, "text": text[:MAX_EVENT_CHARS]}
        if tools:
            event["tool_results"] = [t[:4000] for t in tools[:20]]
        if (when := _time(entry)) is not None:
            event["time"] = when
        if session or entry.get("sessionId"):
            event["session"] = str(session or entry.get("sessionId"))[:256]
        yield event


def batches(events: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for event in events:
        length = len(event["text"]) + sum(map(len, event.get("tool_results", [])))
        if batch and (len(batch) >= BATCH_EVENTS or size + length > BATCH_CHARS):
            yield batch
            batch, size = [], 0
        batch.append(event)
        size += length
    if batch:
        yield batch


def capture_request(project: str, events: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    return {"project": project, "events": events, "auto_approve": mode == "auto"}


def report_line(name: str, report: Mapping[str, Any]) -> str:
    return (
        f"capsule hook {name}: captured {report['events']} event(s): {report['candidates']} candidate(s) queued,"
        f" {report['approved']} approved at the threshold, {report['skipped']} already queued or stored"
    )
