"""Stores: the contract and its implementations."""

from .base import Cursor, MemoryStore

__all__ = ["Cursor", "MemoryStore"]
