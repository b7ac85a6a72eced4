"""The solutions' two times in the SQLite file (capsule.store.sqlite_learning): when an outcome
was last recorded and when the solution last worked, as the Vector Bridge kept them
(``last_applied_at``, ``verified_on``; COMPAT.md §1.9). Epoch seconds, null until set."""

MIGRATION = """
ALTER TABLE solutions ADD COLUMN last_applied_at REAL;
ALTER TABLE solutions ADD COLUMN verified_on REAL;
"""
