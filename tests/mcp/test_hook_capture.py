"""The stop and post-compact hooks with CAPSULE_HOOK_CAPTURE: the transcript goes to capture's queue."""

from __future__ import annotations

from mcp_support import hook_input, new_data_dir
from test_mcp_hooks import run_hook, stored

from capsule import Settings
from mcp_client.backends import EmbeddedBackend
from mcp_client.capture_ops import capture_ops

CHECKOUT = "/home/dev/shop"  # the recorded hook inputs' cwd


def queued(data_dir, status="pending"):
    backend = EmbeddedBackend.from_settings(Settings(data_dir=data_dir, embedder="hashing"))
    try:
        # The hook names the checkout by its full path (capsule.core.project_identity); a queue with no memory
        # yet has no project its label could find.
        return capture_ops(backend).candidates(project=CHECKOUT, status=status, cursor=None, limit=200).candidates
    finally:
        backend.close()


def test_stop_in_capture_mode_queues_candidates_instead_of_storing(tmp_path):
    data_dir = new_data_dir(tmp_path)
    done = run_hook("stop", hook_input("stop.json"), data_dir, CAPSULE_HOOK_CAPTURE="queue")
    assert done.returncode == 0, done.stderr
    assert "candidate(s) queued, 0 approved" in done.stderr, done.stderr
    assert stored(data_dir) == []  # nothing stored directly
    pending = queued(data_dir)
    assert pending and any("BEGIN IMMEDIATE" in c.text for c in pending)
    assert all(c.session == "5f0c2a1e-8d3b-4b7a-9c61-2f4e7d9a1b30" for c in pending)
    again = run_hook("stop", hook_input("stop.json"), data_dir, CAPSULE_HOOK_CAPTURE="queue")
    assert " 0 candidate(s) queued" in again.stderr, again.stderr
    assert len(queued(data_dir)) == len(pending)


def test_post_compact_in_auto_mode_approves_at_the_threshold(tmp_path):
    data_dir = new_data_dir(tmp_path)
    done = run_hook("post-compact", hook_input("post_compact.json"), data_dir, CAPSULE_HOOK_CAPTURE="auto")
    assert done.returncode == 0 and "capsule hook post-compact: captured 1 event(s)" in done.stderr, done.stderr
    approved = queued(data_dir, "approved")
    assert {m.id for m in stored(data_dir)} == {c.memory_id for c in approved}


def test_an_unknown_setting_keeps_storing_directly(tmp_path):
    data_dir = new_data_dir(tmp_path)
    done = run_hook("stop", hook_input("stop.json"), data_dir, CAPSULE_HOOK_CAPTURE="maybe")
    assert "2 digest(s), 2 stored" in done.stderr
