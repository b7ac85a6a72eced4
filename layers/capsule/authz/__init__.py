"""Authorization: one model, checked in one place, for every object a call reads or changes.
May import: capsule.governance, learning (models) and what lies below them; never the edges.

Authorization: one model, checked in one place, for every object a call reads or changes.

- :mod:`.needs` declares, per operation (a route of functions.routes, and the MCP tool that
  calls the same service), the access it needs, how far it reaches and which kinds of objects
  it reads or changes (memories, project settings, patterns, golden paths, candidates, export
  and sync rows, history, audit, ...).
- :mod:`.check` is the single check a request passes before anything runs: the principal
  (:class:`~capsule.governance.visibility.Reach`: tenant-bound access level, project patterns,
  subjects, the visibility it sees) against the operation's need.
- :mod:`.derived` narrows what a call hands back when it is derived from memories (patterns,
  golden paths, their fixes, export rows, audit records): a limited principal sees only what is
  derived from memories it can read, or nothing.

The tenant itself is never a question here: it comes from the verified identity, and every
store read is already bound to it.
"""

from ..governance.visibility import FULL, Reach
from .check import Request, authorize
from .derived import Readable, audit_keep, export_keep, narrow
from .needs import NEEDS, OBJECTS, REACHES, UNDECLARED, Need, need_of

Principal = Reach  # what a caller may do; FULL is the tenant's own token and unscoped keys

__all__ = [
    "FULL",
    "NEEDS",
    "OBJECTS",
    "Need",
    "Principal",
    "REACHES",
    "Reach",
    "Readable",
    "Request",
    "UNDECLARED",
    "audit_keep",
    "authorize",
    "export_keep",
    "narrow",
    "need_of",
]
