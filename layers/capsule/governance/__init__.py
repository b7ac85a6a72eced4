"""Memory governance: retention classes and expiry, updates with history, supersession, audit.

- :mod:`.retention`: the classes, what each means for eviction and forgetting, TTL rules (pure);
- :mod:`.models`: the requests and results users see for updates, history and revert;
- :mod:`.audit`: the audit actions governance writes (who, when, why);
- :mod:`.history`: update in place (re-embedded), history, revert, supersession;
- :mod:`.intake`: the one place content passes on its way in (a seam for detectors).

The stores' side is :mod:`capsule.store.governance` (SQLite and MongoDB beside it).
"""
