"""Stores: the memory store contract (base), SQLite and MongoDB, and the side stores chosen in sides.
May import: capsule.core, governance, crypto, compat, search (row codecs, terms), config; nothing above.

Stores: the contract and its implementations.
"""

from .base import Cursor, MemoryStore, NearestCandidates

__all__ = ["Cursor", "MemoryStore", "NearestCandidates"]
