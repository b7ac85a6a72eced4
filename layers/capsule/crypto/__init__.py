"""Encryption primitives: AES-GCM envelopes, data-key wrappers (local file, KMS, BYOK) and tenant keyrings.
May import: capsule.core (sealing records and stores at rest is capsule.sealing's).
"""
