"""The Vector Bridge's JSON DIGEST blocks (COMPAT §3.3), read by ``capsule hook stop``: every
fence spelling its Stop hook accepted (and none it refused, but the one we chose to add), its
transcript rules, the text and meta its queue processor ingested, its quality gates, and the
report Claude Code shows the user."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from mcp_support import capsule_command, capsule_env, new_data_dir

from capsule import Settings
from capsule.compat.vector_bridge import meta_as_sent
from mcp_client.backends import EmbeddedBackend
from mcp_client.digest import read_transcript, session_digests
from mcp_client.hooks import project_of
from mcp_client.vb_digest import (
    Skip,
    build_meta,
    build_text,
    first_block,
    latest,
    normalised_remote,
    prepare,
    project_id_hash,
)

BODY = '{"agent": "backend-dev", "task_id": "auth-fix", "summary": "Fixed the SSO logout loop"}'
PARSED = json.loads(BODY)

# ---- the fence spellings (COMPAT §3.3's table) -----------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"```json DIGEST {BODY}```",
        f"```json\nDIGEST\n{BODY}\n```",
        f"```DIGEST {BODY}```",
        f"```digest\n{BODY}```",
        f"```JSON Digest\n{BODY}\n```",
        f"```jsonDIGEST{BODY}```",
        f"Done.\n\n```json DIGEST\n{BODY}\n```\nThanks.",  # anywhere in the message
        f"``` json\nDIGEST\n{BODY}\n```",  # refused by the original, though its comment promised it: we accept it
        f"```\tjson DIGEST {BODY}```",
    ],
)
def test_every_spelling_the_original_accepted_is_read(text):
    block = first_block(text)
    assert block is not None and block.error is None
    assert block.digest == PARSED


@pytest.mark.parametrize(
    "text",
    [
        f"```json DIGEST: {BODY}```",  # a colon after the word
        f"~~~json DIGEST {BODY}~~~",  # another fence
        f"DIGEST {BODY}",  # no fence
        f"```json\n{BODY}\n```",  # no DIGEST word
        f"```json DIGEST {BODY}",  # never closed
        f"```json-ld DIGEST {BODY}```",  # a tag of more than letters and digits
        "```json DIGEST\n{}\n```",  # an empty object is no digest (the original tested its truth)
        '```json DIGEST {"agent": "x"\n``` not closed right',
    ],
)
def test_what_the_original_refused_is_not_a_digest(text):
    assert first_block(text) is None


@pytest.mark.parametrize(
    "text",
    [
        '```json DIGEST {"agent": "a", "note": "ends } ``` inside"}```',  # the capture stops at the first } + fence
        "```json DIGEST {agent: 'a'}```",
        '```json DIGEST {"agent": "a",}```',
    ],
)
def test_a_block_that_is_not_json_is_found_but_not_read(text):
    block = first_block(text)
    assert block is not None and block.digest is None and block.error.startswith("invalid JSON")


def test_a_nested_object_closes_at_the_brace_before_the_fence():
    body = '{"agent": "a", "task_id": "t", "evidence": {"tests": "12 passed"}}'
    assert first_block(f"```json DIGEST\n{body}\n```").digest == json.loads(body)


# ---- the transcript -----------------------------------------------------------------------------


def prompt(text: str) -> dict:
    return {"type": "user", "message": {"role": "user", "content": text}}


def tool_result(text: str) -> dict:
    return {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}]},
    }


def said(*texts: str) -> dict:
    return {
        "type": "assistant",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": t} for t in texts]
            + [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
        },
    }


def digest_text(task: str, **fields) -> str:
    return "```json DIGEST\n" + json.dumps({"agent": "dev", "task_id": task, "summary": "s", **fields}) + "\n```"


def test_the_newest_assistant_message_with_a_parsable_digest_wins():
    found = latest(
        [
            prompt("go"),
            said(digest_text("old")),
            said("no digest here"),
            said(digest_text("new")),
            tool_result(digest_text("from-a-tool")),
        ]
    )  # only assistant messages are read
    assert found.digest["task_id"] == "new" and found.fresh


def test_only_the_first_block_of_a_message_counts():
    bad_first = "```json DIGEST {not json}```\n" + digest_text("second-in-message")
    found = latest([prompt("go"), said(digest_text("older")), said(bad_first)])
    assert found.digest["task_id"] == "older"  # the message with an invalid first block yields nothing
    assert found.fresh_errors() and found.fresh_errors()[0].startswith("invalid JSON")

    two = latest([prompt("go"), said(digest_text("first") + "\n" + digest_text("second"))])
    assert two.digest["task_id"] == "first"


def test_text_blocks_of_one_message_are_joined_by_newlines():
    opening, rest = "```json\nDIGEST", '\n{"agent": "dev", "task_id": "split", "summary": "s"}\n```'
    assert latest([said(opening, rest)]).digest["task_id"] == "split"


def test_a_digest_of_an_earlier_turn_is_found_but_not_fresh():
    found = latest([prompt("one"), said(digest_text("t1")), prompt("two"), said("just talk")])
    assert found.digest["task_id"] == "t1" and not found.fresh


ENTRIES = [prompt("fix the login"), said("Looking."), tool_result("ok"), said("Done.\n" + digest_text("auth-fix"))]


@pytest.mark.parametrize("form", ["jsonl", "array"])
def test_a_transcript_is_read_in_both_file_forms(tmp_path, form):
    path = tmp_path / f"transcript.{form}"
    if form == "jsonl":
        path.write_text("\n".join(json.dumps(e) for e in ENTRIES) + "\n{torn line\n", "utf-8")
    else:
        path.write_text(json.dumps(ENTRIES, indent=2), "utf-8")
    assert list(read_transcript(path)) == ENTRIES
    ours, newest = session_digests(path)
    assert ours == [] and newest.digest["task_id"] == "auth-fix" and newest.fresh


# ---- the memory a digest becomes ------------------------------------------------------------------

FULL = {
    "agent": "backend-dev",
    "task_id": "auth-fix",
    "type": "incident",
    "stage": "validated",
    "outcome_status": "partial",
    "confidence": 0.8,
    "summary": "SSO users were logged out after the token refresh change.",
    "problem": "SSO users were logged out every 5 minutes",
    "root_cause": "REFRESH_TTL was read in minutes but written in seconds",
    "solution": "Read REFRESH_TTL in seconds everywhere",
    "outcome": "No logouts in 24 h of staging traffic",
    "cross_project_lesson": "Name every duration setting with its unit",
    "decisions": ["Keep the setting's name", "Add a unit test per duration"],
    "files": [
        {"path": "src/auth/session.py", "reason": "TTL read", "anchors": [{"symbol": "refresh"}]},
        {"path": "src/config.py", "reason": "default"},
        {"path": "tests/test_session.py", "reason": "test"},
        {"path": "docs/auth.md", "reason": "docs"},
    ],
    "contracts": [
        "POST /auth/refresh returns 401 on an expired token",
        "Session cookie lives 30 days",
        "REFRESH_TTL is in seconds",
        "A fourth contract",
    ],
    "next": ["Audit the other TTLs", "Add an alert on logout spikes", "Tell the mobile team", "A fourth step"],
    "evidence": {"tests": "42 passed"},
    "problem_type": "configuration",
    "solution_pattern": "unit-suffix",
    "tech_stack": ["python", "fastapi"],
    "keywords": ["sso", "ttl"],
}

FULL_TEXT = """Session Summary: backend-dev agent completed task 'auth-fix'

Summary: SSO users were logged out after the token refresh change.

Problem: SSO users were logged out every 5 minutes
Root Cause: REFRESH_TTL was read in minutes but written in seconds
Solution: Read REFRESH_TTL in seconds everywhere
Outcome: No logouts in 24 h of staging traffic

Cross-Project Lesson: Name every duration setting with its unit

Project Context: Modified session.py, config.py, test_session.py
  (and 1 more files)

API Contracts Affected:
  - POST /auth/refresh returns 401 on an expired token
  - Session cookie lives 30 days
  - REFRESH_TTL is in seconds

Recommended Next Steps:
  1. Audit the other TTLs
  2. Add an alert on logout spikes
  3. Tell the mobile team"""


def test_the_built_text_of_a_full_digest_is_the_originals_byte_for_byte():
    assert build_text(FULL) == FULL_TEXT


def test_decisions_stand_in_for_problem_and_solution_and_evidence_for_outcome():
    digest = {
        "agent": "test-writer",
        "task_id": "T-9",
        "decisions": ["Use BEGIN IMMEDIATE", "Retry nothing"],
        "evidence": {"tests": "12 passed", "flaky": 0},
        "symptom": "",
        "question": None,
    }
    assert build_text(digest) == (
        "Session Summary: test-writer agent completed task 'T-9'\n"
        "\n"
        "Problem: Use BEGIN IMMEDIATE\n"
        "Solution:\n"
        "  1. Use BEGIN IMMEDIATE\n"
        "  2. Retry nothing\n"
        "Outcome: tests: 12 passed, flaky: 0"
    )
    alternates = {"agent": "a", "task_id": "t", "symptom": "S", "cause": "C", "fix": "F", "impact": "I", "lesson": "L"}
    assert build_text(alternates) == (
        "Session Summary: a agent completed task 't'\n\nProblem: S\nRoot Cause: C\n"
        "Solution: F\nOutcome: I\n\nCross-Project Lesson: L"
    )


def git_checkout(folder: Path, remote: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(folder), "config", "remote.origin.url", remote], check=True)
    return folder


def test_the_project_id_hash_is_of_the_normalised_remote_else_of_the_path(tmp_path):
    assert normalised_remote("git@github.com:acme/shop.git") == "https://github.com/acme/shop"
    assert normalised_remote("https://github.com/acme/shop.git") == "https://github.com/acme/shop"
    expected = hashlib.sha256(b"https://github.com/acme/shop").hexdigest()[:16]
    ssh = git_checkout(tmp_path / "ssh", "git@github.com:acme/shop.git")
    https = git_checkout(tmp_path / "https", "https://github.com/acme/shop.git")
    assert project_id_hash(str(ssh)) == project_id_hash(str(https)) == expected  # one id on every clone
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_id_hash(str(plain)) == hashlib.sha256(str(plain).encode()).hexdigest()[:16]


def test_the_meta_is_the_originals_key_for_key(tmp_path):
    root = git_checkout(tmp_path / "shop", "git@github.com:acme/shop.git")
    prepared = prepare(FULL, str(root))
    assert prepared.path == "NOTES.md#digest-auth-fix" and prepared.text == FULL_TEXT
    assert prepared.meta == {
        "source": "digest",
        "agent": "backend-dev",
        "task_id": "auth-fix",
        "component": "orchestration",
        "category": "digest",
        "type": "incident",
        "stage": "validated",
        "outcome_status": "partial",
        "confidence": 0.8,
        "project_root": str(root),
        "project_name": "shop",
        "project_id_hash": hashlib.sha256(b"https://github.com/acme/shop").hexdigest()[:16],
        "problem_type": "configuration",
        "solution_pattern": "unit-suffix",
        "tech_stack": ["python", "fastapi"],
        "keywords": ["sso", "ttl"],
        "status": "valid",
    }
    assert list(prepared.meta) == list(build_meta(FULL, str(root), "x"))  # the original's key order


def test_defaults_fill_the_meta_and_empty_optionals_stay_out():
    meta = build_meta({"agent": "a", "task_id": "t", "tech_stack": [], "problem_type": ""}, "/p/app", "h")
    assert meta["type"] == "decision" and meta["stage"] == "implemented"
    assert meta["outcome_status"] == "none" and meta["confidence"] == 0.95
    assert meta["project_name"] == "app"
    assert not {"problem_type", "solution_pattern", "tech_stack", "keywords"} & set(meta)


@pytest.mark.parametrize(
    "digest, reason",
    [
        ({"agent": "a", "task_id": "t"}, "insufficient_content"),
        ({"agent": "a", "task_id": "t", "problem": "p"}, "insufficient_content"),  # a problem without a solution
        ({"task_id": "t", "summary": "a long enough summary of the work that was done"}, "missing_agent"),
        ({"agent": "UNKNOWN", "task_id": "t", "summary": "s"}, "missing_agent"),
        ({"agent": "a", "summary": "s"}, "missing_task_id"),
        ({"agent": "a", "task_id": "untagged", "summary": "s"}, "missing_task_id"),
        ({"agent": "a", "task_id": "", "summary": "s"}, "missing_task_id"),
        # (insufficient_length, under 50 characters, cannot fire: a digest past gates 1-3 builds at least 56)
    ],
)
def test_the_quality_gates_stop_what_the_original_stopped(digest, reason):
    with pytest.raises(Skip) as stopped:
        prepare(digest, "/p/app")
    assert stopped.value.reason == reason and stopped.value.message.startswith("Quality gate failed")


def test_each_gate_lets_its_alternatives_through():
    for digest in (
        {"agent": "a", "task_id": "t", "summary": "A summary long enough to pass the last gate"},
        {"agent": "a", "task_id": "t", "symptom": "It broke at night", "fix": "Pinned the version"},
        {"agent": "a", "task_id": "t", "decisions": ["Use the queue for every write"]},
    ):
        assert prepare(digest, "/p/app").text.startswith("Session Summary: a agent completed task 't'")


# ---- capsule hook stop, end to end ------------------------------------------------------------------


def run_stop(payload: dict, data_dir: Path, project_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        capsule_command("hook", "stop"),
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=capsule_env(data_dir, CLAUDE_PROJECT_DIR=str(project_dir)),
        timeout=120,
    )


def backend(data_dir: Path) -> EmbeddedBackend:
    return EmbeddedBackend.from_settings(Settings(data_dir=data_dir, embedder="hashing"))


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return git_checkout(tmp_path / "my-app", "git@github.com:acme/my-app.git")


def write_transcript(tmp_path: Path, entries: list[dict], form: str = "jsonl") -> Path:
    path = tmp_path / f"session.{form}"
    text = json.dumps(entries) if form == "array" else "\n".join(json.dumps(e) for e in entries) + "\n"
    path.write_text(text, "utf-8")
    return path


def stop_payload(transcript: Path | None, checkout: Path, **extra) -> dict:
    payload = {
        "session_id": "5f0c2a1e",
        "cwd": str(checkout),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "permission_mode": "default",
        **extra,
    }
    if transcript is not None:
        payload["transcript_path"] = str(transcript)
    return payload


@pytest.mark.parametrize("form", ["jsonl", "array"])
def test_hook_stop_stores_the_digest_and_tells_the_user(tmp_path, checkout, form):
    data_dir = new_data_dir(tmp_path)
    digest = dict(FULL, outcome_status="none")
    entries = [
        prompt("Fix the SSO logout loop"),
        said("On it."),
        tool_result("42 passed"),
        said("Fixed.\n\n```json DIGEST\n" + json.dumps(digest, indent=2) + "\n```"),
    ]
    payload = stop_payload(write_transcript(tmp_path, entries, form), checkout)
    project = project_of(payload, capsule_env(data_dir, CLAUDE_PROJECT_DIR=str(checkout)))

    done = run_stop(payload, data_dir, checkout)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"systemMessage": f"Capsule: stored 1 digest (task auth-fix) in {project}"}
    assert "capsule hook stop: 1 digest(s), 1 stored, 0 already stored" in done.stderr

    memory = backend(data_dir)
    try:
        found = memory.search({"project": project, "query": "SSO logout REFRESH_TTL seconds", "k": 3}).results
    finally:
        memory.close()
    hit = found[0]
    assert hit.path == "NOTES.md#digest-auth-fix"
    assert hit.content == FULL_TEXT
    assert hit.meta["outcome_status"] == "unknown"  # our reading of "none", for ranking
    assert meta_as_sent(hit.meta) == prepare(digest, str(checkout)).meta  # and the meta exactly as the original sent it
    assert meta_as_sent(hit.meta)["outcome_status"] == "none"

    again = run_stop(payload, data_dir, checkout)  # Stop runs after every turn: the same digest again
    assert again.returncode == 0 and again.stdout == ""  # nothing new to tell
    assert "1 digest(s), 0 stored, 1 already stored" in again.stderr


def test_hook_stop_reads_the_payload_text_first(tmp_path, checkout):
    data_dir = new_data_dir(tmp_path)
    transcript = write_transcript(tmp_path, [prompt("go"), said(digest_text("from-transcript"))])
    text = (
        "All done.\n```DIGEST "
        + json.dumps(
            {"agent": "qa", "task_id": "from-payload", "summary": "Checked every release note for broken links"}
        )
        + "```"
    )
    done = run_stop(stop_payload(transcript, checkout, assistant_text=text), data_dir, checkout)
    assert done.returncode == 0, done.stderr
    assert "(task from-payload)" in json.loads(done.stdout)["systemMessage"]

    alone = run_stop(
        stop_payload(None, checkout, final_message=text.replace("from-payload", "no-transcript")), data_dir, checkout
    )
    assert alone.returncode == 0 and "(task no-transcript)" in json.loads(alone.stdout)["systemMessage"]

    missing = stop_payload(tmp_path / "gone.jsonl", checkout, content=text.replace("from-payload", "gone"))
    lost = run_stop(missing, data_dir, checkout)  # the payload's digest survives an unreadable transcript
    assert lost.returncode == 0 and "(task gone)" in json.loads(lost.stdout)["systemMessage"]


def test_hook_stop_says_why_a_digest_was_not_stored(tmp_path, checkout):
    data_dir = new_data_dir(tmp_path)
    gated = "```json DIGEST\n" + json.dumps({"task_id": "no-agent", "summary": "Cleaned up the logs"}) + "\n```"
    transcript = write_transcript(tmp_path, [prompt("go"), said(gated)])
    done = run_stop(stop_payload(transcript, checkout), data_dir, checkout)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "systemMessage": (
            "Capsule: did not store the DIGEST of task no-agent: Quality gate failed: DIGEST must specify agent"
            " (missing_agent)"
        )
    }
    assert "task no-agent not stored" in done.stderr

    later = write_transcript(tmp_path, [prompt("go"), said(gated), prompt("and now?"), said("Nothing else.")])
    quiet = run_stop(stop_payload(later, checkout), data_dir, checkout)
    assert quiet.returncode == 0 and quiet.stdout == ""  # reported in its own turn, not after every later one

    broken = write_transcript(tmp_path, [prompt("go"), said('```json DIGEST {"agent": "a", task_id: 1}```')])
    unread = run_stop(stop_payload(broken, checkout), data_dir, checkout)
    assert unread.returncode == 0
    assert json.loads(unread.stdout)["systemMessage"].startswith("Capsule: a DIGEST block was not read: invalid JSON")

    memory = backend(data_dir)
    try:
        assert (
            memory.list_memories(
                {
                    "project": project_of(
                        stop_payload(None, checkout), capsule_env(data_dir, CLAUDE_PROJECT_DIR=str(checkout))
                    ),
                    "limit": 10,
                }
            ).memories
            == []
        )
    finally:
        memory.close()


def test_hook_stop_without_a_digest_stays_quiet(tmp_path, checkout):
    data_dir = new_data_dir(tmp_path)
    transcript = write_transcript(tmp_path, [prompt("hi"), said('Hello! ```json\n{"a": 1}\n```')])
    done = run_stop(stop_payload(transcript, checkout), data_dir, checkout)
    assert done.returncode == 0 and done.stdout == ""
    assert "0 digest(s), 0 stored" in done.stderr


def test_our_own_digest_form_does_not_read_a_json_digest_twice(tmp_path):
    from mcp_client.digest import find_digests

    assert find_digests(f"```digest\n{BODY}\n```") == []  # a Vector Bridge block, read once, by its rules
    path = write_transcript(tmp_path, [prompt("go"), said(f"```digest\n{BODY}\n```")])
    ours, newest = session_digests(path)
    assert ours == [] and newest.digest == PARSED


def test_a_digest_the_memory_refuses_is_reported_and_the_hook_still_exits_zero(tmp_path, checkout):
    import io

    from mcp_client.hooks import run_hook

    data_dir = new_data_dir(tmp_path)
    big = (
        "```json DIGEST\n"
        + json.dumps(
            {"agent": "a", "task_id": "big", "summary": "A summary of the work", "keywords": ["k" * 100] * 200}
        )
        + "\n```"
    )
    payload = stop_payload(write_transcript(tmp_path, [prompt("go"), said(big)]), checkout)
    out, err = io.StringIO(), io.StringIO()
    code = run_hook(
        "stop",
        io.StringIO(json.dumps(payload)),
        out,
        err,
        open_backend=lambda: backend(data_dir),
        environ={"CLAUDE_PROJECT_DIR": str(checkout)},
    )
    assert code == 0
    message = json.loads(out.getvalue())["systemMessage"]
    assert message.startswith("Capsule: the memory refused the digest of task big: meta") and "16384" in message
    assert "task big refused" in err.getvalue()
