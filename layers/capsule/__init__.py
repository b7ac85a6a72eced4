"""Capsule Memory: long-term memory for AI agents (the shared library).

The public surface is listed in ``__all__``; everything else is internal.
"""

from .config import Settings
from .errors import (
    CapsuleError,
    Conflict,
    Forbidden,
    InvalidInput,
    MalformedBody,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
    Unavailable,
)
from .service import MemoryService

__version__ = "0.1.0"

__all__ = [
    "CapsuleError",
    "Conflict",
    "Forbidden",
    "InvalidInput",
    "MalformedBody",
    "MemoryService",
    "NotFound",
    "PayloadTooLarge",
    "Settings",
    "Unauthorized",
    "Unavailable",
]
