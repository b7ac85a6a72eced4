"""Encryption at rest: AES-GCM envelopes under per-tenant data keys (capsule.crypto).

* :mod:`.envelope` seals and opens one value (pure functions, a versioned token);
* :mod:`.wrappers` wrap a data key: a local key file (embedded), AWS KMS (hosted), or the
  caller's own key from ``X-Capsule-BYOK``;
* :mod:`.keys` keeps each tenant's data keys (wrapped, versioned) and rotates them;
* :mod:`.sealing` turns a memory record into its sealed form and back;
* :mod:`.sealedstore` puts that in front of any memory store, so SQLite and MongoDB store the
  same envelopes.
"""
