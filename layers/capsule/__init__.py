"""Capsule Memory: long-term memory for AI agents (the shared library).

The public surface is listed in ``__all__``; everything else is internal.

``Settings`` and ``MemoryService`` load on first use (PEP 562): they bring pydantic and
numpy, and a command that only needs :mod:`capsule.core.errors` or :mod:`capsule.core.limits` (a
hook reaching the warm local server) must start without them.
"""

from __future__ import annotations

from .core.errors import (
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

TYPE_CHECKING = False  # not typing's: a hook reaching the warm server starts without typing
if TYPE_CHECKING:
    from typing import Any

    from .config import Settings
    from .service.memory_service import MemoryService

_LAZY = {"Settings": "config", "MemoryService": "service.memory_service"}

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


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
