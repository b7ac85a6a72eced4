"""Learning from use: solutions (fixpacks), error patterns, golden paths and pattern mining."""

from .safe_regex import SafeRegex, UnsafePattern, compile_safe
from .service import LearningService

__all__ = ["LearningService", "SafeRegex", "UnsafePattern", "compile_safe"]
