"""The Vector Bridge's DIGEST blocks (COMPAT §3.3): found as its Stop hook found them, built
into the memory its queue processor ingested, with the same quality gates.

An agent of a Vector Bridge setup ends a piece of work with a JSON object in a fence::

    ```json DIGEST
    {"agent": "backend-dev", "task_id": "auth-fix", "decisions": ["..."], ...}
    ```

The original (``stop_digest.py``) matched ```` ```[a-zA-Z0-9]*\\s*DIGEST\\s*(\\{.*?\\})\\s*``` ````,
case-insensitive, across lines: a fence, at once an optional language tag, the word DIGEST, and
a JSON object up to the first ``}`` that closes the fence. We read exactly that, plus one
spelling it refused though its own comment promised it: spaces between the backticks and the
tag (```` ``` json⏎DIGEST ````). Accepting it loses nothing (the word DIGEST and valid JSON are
still required), and a user who wrote it, as that comment told them, gets their digest stored.

From a transcript, the newest assistant message holding a parsable block wins, and inside one
message only the first block counts (an invalid first block makes that message yield nothing).
The Stop payload's ``assistant_text`` / ``final_message`` / ``content`` (the first non-empty) is
looked at first.

What we do better: the original counted a digest its quality gates stopped as a failure and
retried it until it was dead-lettered, silently; here it is reported, with the gate's reason,
and not retried.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # the stop hook starts without typing
    from collections.abc import Iterable, Mapping
    from typing import Any

# The original's pattern, with the tag spelled ASCII on purpose: under IGNORECASE, [a-zA-Z]
# would also take the Kelvin sign and the long s. DIGEST itself is case-insensitive, as there.
# `[ \t]*` before the tag is the one spelling we add (see the module doc).
DIGEST_BLOCK = re.compile(r"```[ \t]*[A-Za-z0-9]*\s*[Dd][Ii][Gg][Ee][Ss][Tt]\s*(\{.*?\})\s*```", re.S)

PAYLOAD_TEXT_FIELDS = ("assistant_text", "final_message", "content")
MIN_TEXT_CHARS = 50  # the original's gate 4
GIT_TIMEOUT_S = 2.0  # as the original's `git config` call


class Block:
    """The first DIGEST block of one text: its object, or why it could not be read."""

    __slots__ = ("digest", "error")

    def __init__(self, digest: dict[str, Any] | None = None, error: str | None = None) -> None:
        self.digest, self.error = digest, error


def first_block(text: Any) -> Block | None:
    """The first DIGEST block of ``text``; None when there is none (or the text is no string).

    An empty object counts as none, as in the original (it tested the parsed digest's truth)."""
    if not isinstance(text, str):
        return None
    found = DIGEST_BLOCK.search(text)
    if found is None:
        return None
    try:
        digest = json.loads(found.group(1))
    except ValueError as exc:  # includes a `}` + fence inside a string: the capture stops there
        return Block(error=f"invalid JSON: {exc}")
    return Block(digest=digest) if digest else None


def payload_text(payload: Mapping[str, Any]) -> Any:
    """The Stop payload's own text, the original's first non-empty of three fields."""
    for field in PAYLOAD_TEXT_FIELDS:
        if payload.get(field):
            return payload[field]
    return None


def message_text(entry: Mapping[str, Any]) -> str | None:
    """An assistant message's text as the original read it: ``type == "assistant"``, the
    ``text`` of its ``message.content[]`` text blocks joined by newlines (a plain string content,
    which the original skipped, is read too)."""
    if entry.get("type") != "assistant" or not isinstance(entry.get("message"), dict):
        return None
    content = entry["message"].get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = [block.get("text") or "" for block in content if isinstance(block, dict) and block.get("type") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str)) if parts else None


def is_prompt(entry: Mapping[str, Any]) -> bool:
    """A person's prompt (a new turn), not a tool result the transcript also files as ``user``."""
    message = entry.get("message")
    if entry.get("type") != "user" or not isinstance(message, dict):
        return False
    content = message.get("content")
    return isinstance(content, str) or (
        isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "text" for b in content)
    )


class Latest:
    """Fed a transcript's entries in order: the newest parsable DIGEST, and whether it (or an
    unreadable block) belongs to the last turn, which is what this Stop reports on."""

    __slots__ = ("digest", "digest_turn", "turn", "errors")

    def __init__(self) -> None:
        self.digest: dict[str, Any] | None = None
        self.digest_turn = -1
        self.turn = 0
        self.errors: list[tuple[int, str]] = []  # (turn, why) of first blocks that could not be read

    def feed(self, entry: Mapping[str, Any]) -> None:
        if is_prompt(entry):
            self.turn += 1
            return
        block = first_block(message_text(entry))
        if block is None:
            return
        if block.digest is not None:
            self.digest, self.digest_turn = block.digest, self.turn
        else:
            self.errors.append((self.turn, block.error or "unreadable"))

    @property
    def fresh(self) -> bool:
        return self.digest is not None and self.digest_turn == self.turn

    def fresh_errors(self) -> list[str]:
        return [why for turn, why in self.errors if turn == self.turn]


def latest(entries: Iterable[Mapping[str, Any]]) -> Latest:
    found = Latest()
    for entry in entries:
        found.feed(entry)
    return found


# ---- the memory a digest becomes -------------------------------------------------------------


class Skip(Exception):
    """A quality gate stopped the digest: ``reason`` is the original's code, the message its text."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def gate(digest: Mapping[str, Any]) -> None:
    """Gates 1-3 of the original, in its order (gate 4, the text's length, is in :func:`prepare`)."""
    has_summary = bool(digest.get("summary"))
    has_problem_solution = bool(digest.get("problem") or digest.get("symptom")) and bool(
        digest.get("solution") or digest.get("fix")
    )
    if not (has_summary or has_problem_solution or bool(digest.get("decisions"))):
        raise Skip(
            "insufficient_content", "Quality gate failed: DIGEST must have summary, problem+solution, or decisions"
        )
    if digest.get("agent", "UNKNOWN") == "UNKNOWN":
        raise Skip("missing_agent", "Quality gate failed: DIGEST must specify agent")
    task = digest.get("task_id", "untagged")
    if task == "untagged" or not task:
        raise Skip("missing_task_id", "Quality gate failed: DIGEST must have meaningful task_id")


def _items(value: Any) -> list[Any]:
    """A list field; one string given where the original wanted a list is one item (it would
    have iterated the string's characters)."""
    if isinstance(value, list):
        return value
    return [value] if isinstance(value, str) and value else []


def _file_name(item: Any) -> str:
    path = item.get("path", "") if isinstance(item, dict) else item if isinstance(item, str) else ""
    return str(path).split("/")[-1]


def build_text(digest: Mapping[str, Any]) -> str:
    """The memory's text, line for line as the original built it (f-string formatting included,
    so a non-string value reads as Python printed it there)."""
    agent = digest.get("agent", "UNKNOWN")
    task = digest.get("task_id", "untagged")
    decisions = _items(digest.get("decisions", []))
    files = _items(digest.get("files", []))
    contracts = _items(digest.get("contracts", []))
    next_steps = _items(digest.get("next", []))
    evidence = digest.get("evidence", {})
    summary = digest.get("summary", "")
    problem = digest.get("problem") or digest.get("symptom") or digest.get("question") or ""
    root_cause = digest.get("root_cause") or digest.get("cause") or ""
    solution = digest.get("solution") or digest.get("fix") or ""
    outcome = digest.get("outcome") or digest.get("results") or digest.get("impact") or ""
    lesson = digest.get("cross_project_lesson") or digest.get("lesson") or ""

    lines = [f"Session Summary: {agent} agent completed task '{task}'", ""]
    if summary:
        lines += [f"Summary: {summary}", ""]
    if problem:
        lines.append(f"Problem: {problem}")
    elif decisions:
        lines.append(f"Problem: {decisions[0]}")
    if root_cause:
        lines.append(f"Root Cause: {root_cause}")
    if solution:
        lines.append(f"Solution: {solution}")
    elif decisions:
        lines.append("Solution:")
        lines += [f"  {i}. {decision}" for i, decision in enumerate(decisions, 1)]
    if outcome:
        lines.append(f"Outcome: {outcome}")
    elif evidence:
        pairs = evidence.items() if isinstance(evidence, dict) else [("evidence", evidence)]
        lines.append(f"Outcome: {', '.join(f'{k}: {v}' for k, v in pairs)}")
    # The original prefixed these four sections with "\n" inside the line: a blank line each.
    if lesson:
        lines.append(f"\nCross-Project Lesson: {lesson}")
    if files:
        lines.append(f"\nProject Context: Modified {', '.join(_file_name(f) for f in files[:3])}")
        if len(files) > 3:
            lines.append(f"  (and {len(files) - 3} more files)")
    if contracts:
        lines.append("\nAPI Contracts Affected:")
        lines += [f"  - {contract}" for contract in contracts[:3]]
    if next_steps:
        lines.append("\nRecommended Next Steps:")
        lines += [f"  {i}. {step}" for i, step in enumerate(next_steps[:3], 1)]
    return "\n".join(lines)


def build_meta(digest: Mapping[str, Any], project_root: str, id_hash: str) -> dict[str, Any]:
    """The meta the original sent with the ingest, key for key and in its order."""
    meta: dict[str, Any] = {
        "source": "digest",
        "agent": digest.get("agent", "UNKNOWN"),
        "task_id": digest.get("task_id", "untagged"),
        "component": "orchestration",
        "category": "digest",
        "type": digest.get("type", "decision"),
        "stage": digest.get("stage", "implemented"),
        "outcome_status": digest.get("outcome_status", "none"),  # kept verbatim: none, partial, failed, ...
        "confidence": digest.get("confidence", 0.95),
        "project_root": project_root,
        "project_name": os.path.basename(project_root) or "unknown",
        "project_id_hash": id_hash,
    }
    for key in ("problem_type", "solution_pattern", "tech_stack", "keywords"):
        if digest.get(key):
            meta[key] = digest[key]
    meta["status"] = "valid"
    return meta


def normalised_remote(url: str) -> str:
    """COMPAT §2.1: a trailing ``.git`` removed, ``git@host:`` rewritten to ``https://host/``."""
    url = re.sub(r"\.git$", "", url)
    return re.sub(r"^git@([^:]+):", r"https://\1/", url)


def project_id_hash(project_root: str) -> str:
    """First 16 hex of SHA-256 of the checkout's normalised ``remote.origin.url``, else of its
    absolute path: the same value on every machine the repository is cloned to."""
    import subprocess  # only once a digest passed its gates: the hook starts without it

    source = os.path.abspath(project_root)
    try:
        done = subprocess.run(
            ["git", "-C", project_root, "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
        )
        if done.returncode == 0 and done.stdout.strip():
            source = normalised_remote(done.stdout.strip())
    except (OSError, subprocess.SubprocessError):  # no git, or too slow: the path, as the original
        pass
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


class Prepared:
    """What one digest is ingested as: the original's ``memory_ingest`` arguments."""

    __slots__ = ("task", "path", "text", "meta")

    def __init__(self, task: str, path: str, text: str, meta: dict[str, Any]) -> None:
        self.task, self.path, self.text, self.meta = task, path, text, meta


def prepare(digest: Mapping[str, Any], project_root: str) -> Prepared:
    """The ingest a digest becomes; raises :class:`Skip` where a quality gate stops it."""
    gate(digest)
    text = build_text(digest)
    if len(text) < MIN_TEXT_CHARS:
        raise Skip(
            "insufficient_length", f"Quality gate failed: DIGEST text too short ({len(text)} < {MIN_TEXT_CHARS} chars)"
        )
    task = f"{digest.get('task_id', 'untagged')}"
    meta = build_meta(digest, project_root, project_id_hash(project_root))
    return Prepared(task=task, path=f"NOTES.md#digest-{task}", text=text, meta=meta)


def task_label(digest: Mapping[str, Any]) -> str:
    task = digest.get("task_id")
    return str(task) if task not in (None, "") else "untagged"


__all__ = [
    "DIGEST_BLOCK",
    "Block",
    "first_block",
    "payload_text",
    "message_text",
    "Latest",
    "latest",
    "Skip",
    "gate",
    "build_text",
    "build_meta",
    "project_id_hash",
    "normalised_remote",
    "Prepared",
    "prepare",
    "task_label",
]
