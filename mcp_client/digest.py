"""Reading what a Claude Code session leaves behind: DIGEST blocks, compaction summaries, outcomes.

A DIGEST block is what an agent writes at the end of a piece of work so the next session can
pick it up. It is either a fenced block whose info string is ``digest``::

    ```digest
    agent: backend-dev
    task: T-42
    status: success
    decisions:
    - Use BEGIN IMMEDIATE for every SQLite write (deadlocks under two writers)
    files:
    - layers/capsule/store/sqlite.py
    contracts:
    - MemoryStore.insert is all-or-nothing
    next:
    - Add the Mongo store's contract tests
    ```

or the same lines between ``<digest>`` and ``</digest>``. Header lines are ``key: value``
(``agent``, ``task``, ``status``); sections are ``decisions``, ``files``, ``contracts`` and
``next`` (also ``next steps``), each followed by ``-`` bullets. ``status`` is success, failure
or unknown (done/passed/fixed count as success; failed/blocked/broken as failure).

The Vector Bridge's JSON form (```` ```json DIGEST {...}``` ````) is read by its own rules in
:mod:`mcp_client.vb_digest`; :func:`session_digests` reads both in one pass over a transcript
(JSON Lines, or a JSON array of the same entries).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .vb_digest import Latest

TYPE_CHECKING = False
if TYPE_CHECKING:  # the stop hook starts without typing
    from collections.abc import Iterator
    from typing import Any

_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*digest[ \t]*\n(.*?)^[ \t]*\1[ \t]*$", re.M | re.S | re.I)
_TAGGED = re.compile(r"<digest>[ \t]*\n?(.*?)</digest>", re.S | re.I)
_KEY = re.compile(r"^[ \t]*([A-Za-z][A-Za-z _-]{0,30}?)[ \t]*:[ \t]*(.*)$")
_BULLET = re.compile(r"^[ \t]*(?:[-*•]|\d+[.)])[ \t]+(.*)$")

SECTIONS = {
    "decisions": "decisions",
    "decision": "decisions",
    "files": "files",
    "contracts": "contracts",
    "contract": "contracts",
    "next": "next",
    "next steps": "next",
    "next_steps": "next",
    "next-steps": "next",
    "todo": "next",
}
HEADERS = {
    "agent": "agent",
    "author": "agent",
    "task": "task",
    "task id": "task",
    "task_id": "task",
    "status": "status",
    "outcome": "status",
}
SUCCESS_WORDS = {
    "success",
    "succeeded",
    "done",
    "complete",
    "completed",
    "passed",
    "pass",
    "ok",
    "fixed",
    "resolved",
    "merged",
    "shipped",
}
FAILURE_WORDS = {"failure", "failed", "fail", "blocked", "broken", "error", "abandoned", "reverted"}


class Digest:
    """One DIGEST block (a plain class, not a dataclass: the stop hook starts without dataclasses)."""

    __slots__ = ("text", "agent", "task", "status", "sections")

    def __init__(
        self,
        text: str,
        agent: str | None = None,
        task: str | None = None,
        status: str = "unknown",
        sections: dict[str, list[str]] | None = None,
    ) -> None:
        self.text, self.agent, self.task, self.status = text, agent, task, status
        self.sections = {} if sections is None else sections

    def _fields(self) -> tuple:
        return self.text, self.agent, self.task, self.status, self.sections

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Digest) and self._fields() == other._fields()

    __hash__ = None  # mutable, as the dataclass was

    def __repr__(self) -> str:
        return (
            f"Digest(text={self.text!r}, agent={self.agent!r}, task={self.task!r}, status={self.status!r}, "
            f"sections={self.sections!r})"
        )

    @property
    def empty(self) -> bool:
        return not any(self.sections.values())


def status_of(word: str | None) -> str:
    word = (word or "").strip().lower().rstrip(".!")
    if word in SUCCESS_WORDS:
        return "success"
    if word in FAILURE_WORDS:
        return "failure"
    return "unknown"


def parse_digest(body: str) -> Digest:
    """One block's lines: headers, then sections of bullets (a bullet may follow a key on its line)."""
    digest = Digest(text=body.strip())
    section: str | None = None
    for line in body.splitlines():
        if not line.strip():
            continue
        bullet = _BULLET.match(line)
        key = _KEY.match(line) if not bullet else None
        if key and key.group(1).strip().lower() in HEADERS and not section:
            setattr(digest, HEADERS[key.group(1).strip().lower()], key.group(2).strip() or None)
        elif key and key.group(1).strip().lower() in SECTIONS:
            section = SECTIONS[key.group(1).strip().lower()]
            digest.sections.setdefault(section, [])
            if key.group(2).strip():
                digest.sections[section].append(key.group(2).strip())
        elif bullet and section:
            digest.sections[section].append(bullet.group(1).strip())
        elif key and key.group(1).strip().lower() in HEADERS:
            setattr(digest, HEADERS[key.group(1).strip().lower()], key.group(2).strip() or None)
        elif section and digest.sections[section]:
            digest.sections[section][-1] += " " + line.strip()  # a bullet's continuation line
    digest.status = status_of(digest.status)
    return digest


def find_digests(text: str) -> list[Digest]:
    bodies = [m.group(2) for m in _FENCED.finditer(text)] + [m.group(1) for m in _TAGGED.finditer(text)]
    return [d for d in (parse_digest(b) for b in bodies) if not d.empty]


# ---- the transcript --------------------------------------------------------------------


def read_transcript(path: str | Path) -> Iterator[dict[str, Any]]:
    """Each JSON object of a Claude Code transcript: JSON Lines (unreadable lines are skipped),
    or one JSON array of them (the other form the Vector Bridge's Stop hook read)."""
    with Path(path).expanduser().open("r", encoding="utf-8", errors="replace") as handle:
        if not handle.read(4096).lstrip().startswith("["):
            handle.seek(0)
            yield from _json_lines(handle)  # streamed: a long session is never held whole
            return
        handle.seek(0)
        text = handle.read()
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, list):
        yield from (entry for entry in whole if isinstance(entry, dict))
    else:  # JSON Lines whose first line happens to be an array
        yield from _json_lines(text.splitlines())


def _json_lines(lines: Any) -> Iterator[dict[str, Any]]:
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def _texts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                yield block["text"]
            elif block.get("type") == "tool_result":  # a subagent's final report comes back this way
                yield from _texts(block.get("content"))


def agent_texts(entries: Iterator[dict[str, Any]]) -> Iterator[str]:
    """The assistant's texts, and the tool results (subagent reports) it received."""
    for entry in entries:
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        if entry.get("type") == "assistant" or message.get("role") == "assistant":
            yield from _texts(message.get("content"))
        elif entry.get("type") == "user" and isinstance(message.get("content"), list):
            yield from (
                t
                for b in message["content"]
                if isinstance(b, dict) and b.get("type") == "tool_result"
                for t in _texts(b.get("content"))
            )


def transcript_digests(path: str | Path) -> list[Digest]:
    """Every DIGEST block of the session, once each, in order."""
    return session_digests(path)[0]


def session_digests(path: str | Path) -> tuple[list[Digest], Latest]:
    """In one read of the transcript: every block of ours (:func:`transcript_digests`), and the
    Vector Bridge's newest JSON DIGEST by its own rules (:mod:`mcp_client.vb_digest`)."""
    seen: set[str] = set()
    found = []
    newest = Latest()
    for entry in read_transcript(path):
        newest.feed(entry)
        for text in agent_texts(iter([entry])):
            for digest in find_digests(text):
                if digest.text not in seen:
                    seen.add(digest.text)
                    found.append(digest)
    return found, newest


def last_compact_summary(path: str | Path) -> str | None:
    """The newest compaction summary a transcript holds (the entry marked ``isCompactSummary``)."""
    summary = None
    for entry in read_transcript(path):
        if entry.get("isCompactSummary") and isinstance(entry.get("message"), dict):
            summary = "\n".join(_texts(entry["message"].get("content"))) or summary
    return summary


# ---- outcomes of free text -----------------------------------------------------------------

_STATUS_LINE = re.compile(r"^[ \t*#-]*(?:status|outcome)[ \t*]*:[ \t*]*([A-Za-z]+)", re.M | re.I)
_FAILURE = re.compile(
    r"\b(still (?:failing|broken|fails)|not (?:yet )?(?:fixed|working|resolved|passing)|unresolved|"
    r"(?:tests?|build|deploy\w*|ci) (?:is |are )?(?:still )?fail\w*|failed|failing|could not|couldn't|"
    r"unable to|cannot|blocked|broken|regression|gave up|reverted)\b",
    re.I,
)
_SUCCESS = re.compile(
    r"\b(fixed|resolved|(?:all )?tests? (?:now )?pass(?:es|ed|ing)?|passing|succeeded|successfully|"
    r"completed?|implemented|works now|now works|working|merged|shipped|done)\b",
    re.I,
)


def infer_outcome(text: str) -> str:
    """success, failure or unknown, from a summary's words.

    An explicit ``Status: ...`` line decides. Otherwise failure phrases ("still failing",
    "not fixed", "blocked") and success phrases ("fixed", "tests pass") are counted — failure
    phrases first and removed, so "not working" is never read as "working" — and the larger
    count wins; a tie or no signal is unknown.
    """
    explicit = _STATUS_LINE.search(text)
    if explicit and status_of(explicit.group(1)) != "unknown":
        return status_of(explicit.group(1))
    failures = len(_FAILURE.findall(text))
    successes = len(_SUCCESS.findall(_FAILURE.sub(" ", text)))
    if successes > failures:
        return "success"
    if failures > successes:
        return "failure"
    return "unknown"


__all__ = [
    "Digest",
    "parse_digest",
    "find_digests",
    "read_transcript",
    "agent_texts",
    "transcript_digests",
    "session_digests",
    "last_compact_summary",
    "infer_outcome",
    "status_of",
]
