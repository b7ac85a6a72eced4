"""A project's own secrets/personal-data policies, on every backend in conftest.BACKENDS."""

from datetime import UTC, datetime

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_policies_are_none_until_set_then_kept_per_project(store):
    assert store.guard_policies("t1", "p") == {"secrets_policy": None, "pii_policy": None}
    store.set_guard_policies("t1", "p", {"secrets_policy": "refuse"}, at=T0)
    store.set_guard_policies("t1", "p", {"pii_policy": "redact"}, at=T0)  # the other one is kept
    assert store.guard_policies("t1", "p") == {"secrets_policy": "refuse", "pii_policy": "redact"}
    assert store.guard_policies("t1", "q") == {"secrets_policy": None, "pii_policy": None}
    assert store.guard_policies("t2", "p") == {"secrets_policy": None, "pii_policy": None}


def test_policies_leave_the_retention_limit_alone(store):
    store.set_retention_limit("t1", "p", 7, at=T0)
    store.set_guard_policies("t1", "p", {"secrets_policy": "flag"}, at=T0)
    assert store.retention_limit("t1", "p") == 7
    store.set_guard_policies("t1", "q", {"secrets_policy": "flag"}, at=T0)
    assert store.retention_limit("t1", "q") is None
