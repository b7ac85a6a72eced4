"""Sync: one memory across the embedded store and a remote tenant, incremental, merged by a documented rule.
May import: capsule.transfer, service and everything below them.

Sync: one memory across the embedded store and a remote (``capsule serve`` or hosted)
tenant, incremental per peer and project, merged by a documented rule
(:mod:`capsule.sync.merge`).
"""

from .engine import LocalPeer, Peer, SyncReport, run_sync
from .state import Watermarks, saved_states, state_path

__all__ = ["LocalPeer", "Peer", "SyncReport", "Watermarks", "run_sync", "saved_states", "state_path"]
