"""The audit actions governance writes, beside the stores' own (forget, restore, evict, pin,
unpin, purge). Every record says who (the actor), when and why (the reason)."""

from __future__ import annotations

UPDATE = "update"  # content, tags, meta or expiry changed in place (a version kept)
REVERT = "revert"  # brought back an earlier version (the current one kept as a version)
SUPERSEDE = "supersede"  # replaced by a newer memory (kept, no longer searched by default)
RETENTION = "retention"  # the retention class or expiry changed
EXPIRE = "expire"  # an ephemeral memory past its expiry, purged by the retention job
REFUSE = "refuse"  # a request refused by a governance rule (e.g. forget irreplaceable)
VISIBILITY = "visibility"  # the visibility or subject changed (capsule.governance.visibility)

ACTIONS = (UPDATE, REVERT, SUPERSEDE, RETENTION, EXPIRE, REFUSE, VISIBILITY)
