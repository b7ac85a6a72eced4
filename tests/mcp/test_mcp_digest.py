"""DIGEST blocks, transcripts and outcome inference, on the recorded sample transcript."""

from __future__ import annotations

import pytest
from mcp_support import FIXTURES

from mcp_client.digest import (
    find_digests,
    infer_outcome,
    last_compact_summary,
    parse_digest,
    transcript_digests,
)

TRANSCRIPT = FIXTURES / "transcript.jsonl"


def test_the_transcript_yields_each_digest_once_with_its_headers_and_sections():
    digests = transcript_digests(TRANSCRIPT)
    assert [(d.agent, d.task, d.status) for d in digests] == [
        ("backend-dev", "SHOP-142", "success"),  # fenced, written twice in the session
        ("test-writer", "SHOP-143", "failure"),  # <digest> tags, in a subagent's tool result
    ]
    first, second = digests
    assert first.sections["files"] == ["shop/db.py", "shop/checkout.py"]
    assert first.sections["contracts"] == ["db.write() is all-or-nothing and never returns SQLITE_BUSY"]
    assert first.sections["next"] == ["Add a load test with 8 concurrent checkouts"]
    assert len(first.sections["decisions"]) == 2
    assert second.sections["next"] == ["Needs a sandbox key for the payment provider"]


def test_a_block_without_sections_or_of_another_language_is_not_a_digest():
    text = "```python\nstatus: done\n```\n```digest\nagent: x\nstatus: done\n```\nDIGEST: nothing here"
    assert find_digests(text) == []


def test_continuation_lines_join_their_bullet_and_unknown_status_stays_unknown():
    digest = parse_digest("status: maybe\ndecisions:\n- first line\n  continues here\n- second")
    assert digest.status == "unknown"
    assert digest.sections["decisions"] == ["first line continues here", "second"]


def test_the_newest_compaction_summary_is_found_in_the_transcript():
    summary = last_compact_summary(TRANSCRIPT)
    assert summary is not None and "all tests pass now" in summary


@pytest.mark.parametrize(
    "text, outcome",
    [
        ("The deadlock was fixed and all tests pass now.", "success"),
        ("The payment test is still failing; blocked on a sandbox key.", "failure"),
        ("The build is not working yet.", "failure"),
        ("We discussed the schema.", "unknown"),
        ("Status: success\nSome tests failed earlier.", "success"),
        ("Fixed one bug, but the migration still fails and deploy is blocked.", "failure"),
    ],
)
def test_outcome_is_inferred_from_the_words(text, outcome):
    assert infer_outcome(text) == outcome
