"""Learning from use: solutions (fixpacks), error patterns, golden paths, mining, the LearningService.
May import: capsule.core, store, embedders, guard, search (ranking) and below; never the service.

Learning from use: solutions (fixpacks), error patterns, golden paths and pattern mining.
"""

from typing import Any

from .safe_regex import SafeRegex, UnsafePattern, compile_safe


def __getattr__(name: str) -> Any:
    # The service (and the search and mining it pulls in) loads on first use: importing
    # capsule.learning.models, as every MCP tool does, should not cost a hook's start-up that.
    if name == "LearningService":
        from .service import LearningService

        return LearningService
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["LearningService", "SafeRegex", "UnsafePattern", "compile_safe"]
