"""Capture over the route table's handlers: propose, queue, approve (edited), reject, dedupe, strictness."""

from .events import event

ALICE = "arn:aws:iam::123456789012:user/alice"
BOB = "arn:aws:iam::123456789012:user/bob"
T = "2026-03-02T10:00:00+00:00"
EVENTS = [
    {"role": "user", "text": "Can you run the tests again?", "time": T, "session": "s1"},
    {"role": "assistant", "text": "Let me check the logs.", "time": T, "session": "s1"},
    {
        "role": "assistant",
        "text": "The root cause was a stale .pyc file from the old package layout.",
        "time": T,
        "session": "s1",
    },
    {
        "role": "assistant",
        "text": "We decided to use SQLite in WAL mode because it handles concurrent readers well.",
        "time": T,
        "session": "s1",
    },
    {"role": "user", "text": "Thanks!", "time": T, "session": "s1"},
]


def capture(call, events=EVENTS, tenant=ALICE, **extra):
    return call(event("capture", tenant=tenant, body={"project": "cap", "events": events, **extra}))


def test_capture_proposes_the_decision_and_the_cause_not_the_chatter(service, call):
    r = capture(call)
    assert r.status == 200, r
    texts = [c["text"] for c in r.json["candidates"]]
    assert texts == [EVENTS[2]["text"], EVENTS[3]["text"]]
    first = r.json["candidates"][1]
    assert (first["type"], first["status"], first["session"], first["role"]) == (
        "decision",
        "pending",
        "s1",
        "assistant",
    )
    assert 0 < first["score"] <= 1 and first["reason"] and "decision" in first["tags"]
    listed = call(event("candidates", tenant=ALICE, query={"project": "cap"}))
    assert listed.status == 200 and len(listed.json["candidates"]) == 2
    assert call(event("candidates", tenant=BOB, query={"project": "cap"})).json["candidates"] == []


def test_capturing_the_same_transcript_twice_proposes_nothing_twice(service, call):
    capture(call)
    again = capture(call)
    assert again.json["candidates"] == []
    assert {s["why"] for s in again.json["skipped"]} == {"already pending in the capture queue"}


def test_approve_edited_stores_the_memory_and_twice_is_409(service, call):
    cand = capture(call).json["candidates"][0]
    r = call(
        event(
            "candidate_approve",
            tenant=ALICE,
            path_params={"id": cand["id"]},
            body={"text": "Stale .pyc files from the old layout broke the imports.", "tags": ["python"]},
        )
    )
    assert r.status == 200, r
    memory = r.json["memory"]
    assert memory["content"] == "Stale .pyc files from the old layout broke the imports."
    assert memory["meta"]["tags"] == ["python"] and memory["meta"]["source"] == "capture"
    assert memory["occurred_at"].startswith("2026-03-02T10:00:00")
    assert r.json["candidate"]["status"] == "approved" and r.json["candidate"]["memory_id"] == memory["id"]
    again = call(event("candidate_approve", tenant=ALICE, path_params={"id": cand["id"]}, body={}))
    assert again.status == 409, again
    got = call(event("get", tenant=ALICE, path_params={"id": memory["id"]}))
    assert got.status == 200


def test_rejected_is_not_proposed_again_and_stored_facts_are_not_proposed(service, call):
    first = capture(call).json["candidates"]
    assert (
        call(
            event("candidate_reject", tenant=ALICE, path_params={"id": first[0]["id"]}, body={"reason": "known"})
        ).status
        == 200
    )
    assert call(event("candidate_approve", tenant=ALICE, path_params={"id": first[1]["id"]}, body={})).status == 200
    fresh = [{"role": "assistant", "text": "The fix was to pin numpy below 2.0 in pyproject.toml.", "time": T}]
    stored = call(event("store", tenant=ALICE, body={"project": "cap", "content": fresh[0]["text"]}))
    assert stored.status == 201
    r = capture(call, events=EVENTS + fresh)
    assert r.json["candidates"] == []
    whys = sorted(s["why"] for s in r.json["skipped"])
    assert whys == [
        "already approved in the capture queue",
        "already rejected in the capture queue",
        "already stored as a memory",
    ]


def test_auto_approve_at_the_project_threshold(service, call):
    assert call(event("capture_settings", tenant=ALICE, body={"project": "cap", "threshold": 0.85})).status == 200
    r = capture(call, auto_approve=True)
    scores = {c["id"]: c["score"] for c in r.json["candidates"]}
    assert r.json["threshold"] == 0.85
    assert set(r.json["approved"]) == {i for i, s in scores.items() if s >= 0.85}
    statuses = {c["id"]: c["status"] for c in r.json["candidates"]}
    assert all(statuses[i] == ("approved" if i in r.json["approved"] else "pending") for i in scores)


def test_bad_input_is_refused_naming_the_field(service, call):
    r = capture(call, events=[{"role": "robot", "text": "x"}])
    assert r.status == 422 and "role" in str(r.json["error"]["details"])
    r = capture(call, events=[{"role": "user", "text": "x", "when": T}])
    assert r.status == 422 and "when" in str(r.json["error"]["details"])
    r = capture(call, events=[{"role": "user", "text": 5}])
    assert r.status == 422 and "text" in str(r.json["error"]["details"])
    r = capture(call, events=[{"role": "user", "text": "x", "time": "yesterday"}])
    assert r.status == 422 and "time" in str(r.json["error"]["details"])
    r = capture(call, events=[])
    assert r.status == 422 and "events" in str(r.json["error"]["details"])
    missing = call(event("candidate_approve", tenant=ALICE, path_params={"id": "ab" * 16}, body={}))
    assert missing.status == 404, missing
    r = call(event("candidate_reject", tenant=ALICE, path_params={"id": "ab" * 16}, body={"reasn": "x"}))
    assert r.status == 422 and "reasn" in str(r.json["error"]["details"])
    assert call(event("candidates", tenant=ALICE, query={"status": "maybe"})).status == 422


def test_another_tenant_cannot_decide(service, call):
    cand = capture(call).json["candidates"][0]
    r = call(event("candidate_approve", tenant=BOB, path_params={"id": cand["id"]}, body={}))
    assert r.status == 404


def _with_secret_and_email():
    from tests.guard.corpus import AKIA

    return [
        {
            "role": "assistant",
            "text": f"We decided to rotate the deploy key {AKIA} because it leaked in CI logs.",
            "time": T,
            "session": "s2",
        },
        {
            "role": "assistant",
            "text": "We decided to send the outage report to dora.quince@saltmarrow.net every Monday.",
            "time": T,
            "session": "s2",
        },
    ]


def test_candidates_are_guarded_as_stored_memories_are(service, call, tmp_path):
    """A secret in a conversation is redacted before the candidate is queued (the raw value never
    reaches the queue's table), and personal data is flagged, as a store does."""
    from tests.guard.corpus import AKIA

    r = capture(call, events=_with_secret_and_email())
    assert r.status == 200, r
    texts = [c["text"] for c in r.json["candidates"]]
    assert len(texts) == 2 and AKIA not in " ".join(texts)
    assert "[REDACTED:aws-access-key]" in texts[0] or "[REDACTED:aws-access-key]" in texts[1]
    flagged = [service_record.extra for service_record in _queued(service)]
    assert any(e.get("_guard", {}).get("pii") for e in flagged)
    service.settle()
    assert not [f for f in tmp_path.rglob("*") if f.is_file() and AKIA.encode() in f.read_bytes()]


def test_a_project_refusing_secrets_skips_the_candidate_and_names_why(service, call):
    from tests.guard.corpus import AKIA

    assert (
        call(event("project_settings", tenant=ALICE, body={"project": "cap", "secrets_policy": "refuse"})).status == 200
    )
    r = capture(call, events=_with_secret_and_email())
    assert [c["text"] for c in r.json["candidates"]] == [_with_secret_and_email()[1]["text"]]
    refused = [s for s in r.json["skipped"] if "refuse" in s["why"]]
    assert len(refused) == 1 and AKIA not in refused[0]["text"] and "aws-access-key" in refused[0]["why"]


def _queued(service):
    from capsule.store.sides import candidate_store

    return candidate_store(service.store).list(ALICE, "cap", "pending", before=None, limit=10)
