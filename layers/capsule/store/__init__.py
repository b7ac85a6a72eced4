"""Stores: the contract and its implementations."""

from .base import Cursor, MemoryStore, NearestCandidates

__all__ = ["Cursor", "MemoryStore", "NearestCandidates"]
