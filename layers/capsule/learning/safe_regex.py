"""Regular expressions written by users, compiled so that matching them cannot hang us.

Why RE2 and a static check, rather than a timeout:

* Python's ``re`` backtracks. ``(a+)+b`` is exponential, and even a harmless-looking
  ``.*.*.*x`` is cubic: 39 s on 1,000 characters on this machine. Python cannot stop a
  running ``re`` call, so a "timeout" would need a worker process per match: slow on
  Lambda, and a thread cannot be killed at all.
* RE2 (``google-re2``) never backtracks: matching is linear in the input, always, with a
  memory cap on the compiled program. That is the time bound; together with an input cap it
  bounds every match to microseconds.
* Before compiling, a conservative static check refuses what is catastrophic on a
  backtracking engine (nested quantifiers, ambiguous alternation under a quantifier) and what
  RE2 cannot run (backreferences, lookaround, atomic groups), with a message that names the
  problem. A fixpack is then portable to any engine, and a user learns why instead of finding
  a pattern that silently never matches.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import re2

from ..core.errors import InvalidInput

try:  # the stdlib parser: private, but the only parser of Python regex syntax there is
    from re import _constants as _c  # type: ignore[attr-defined]  # private: not in typeshed
    from re import _parser as _sre  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as _c
    import sre_parse as _sre

MAX_PATTERN_CHARS = 512
MAX_INPUT_CHARS = 16 * 1024
_MAX_PROGRAM_BYTES = 8 << 20
_UNBOUNDED = _c.MAXREPEAT
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)} - {None}
_REFUSED = {
    _c.GROUPREF: "backreferences are not allowed",
    _c.GROUPREF_EXISTS: "conditional groups are not allowed",
    _c.ASSERT: "lookahead/lookbehind is not allowed",
    _c.ASSERT_NOT: "lookahead/lookbehind is not allowed",
}
if hasattr(_c, "ATOMIC_GROUP"):
    _REFUSED[_c.ATOMIC_GROUP] = "atomic groups are not allowed"
if hasattr(_c, "POSSESSIVE_REPEAT"):
    _REFUSED[_c.POSSESSIVE_REPEAT] = "possessive quantifiers are not allowed"


class UnsafePattern(InvalidInput):
    """A pattern refused before it was ever run."""


@dataclass(frozen=True)
class SafeRegex:
    pattern: str
    _compiled: Any

    def search(self, text: str) -> bool:
        """Whether the pattern occurs in the first MAX_INPUT_CHARS characters of ``text``."""
        return self._compiled.search(text[:MAX_INPUT_CHARS]) is not None


def _items(node_value: Any) -> list:
    """The sub-patterns held by one parsed node, whatever its shape."""
    found = []
    values = node_value if isinstance(node_value, (tuple, list)) else [node_value]
    for value in values:
        if isinstance(value, _sre.SubPattern):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            found.extend(_items(value))
    return found


def _has_repeat(sub: Any) -> bool:
    for op, value in sub:
        if op in _REPEATS and value[1] > 1:
            return True
        if any(_has_repeat(s) for s in _items(value)):
            return True
    return False


def _first_chars(sub: Any) -> set[int] | None:
    """The literal characters a branch can start with; None when unknown or possibly empty."""
    if not len(sub):
        return None
    op, value = sub[0]
    if op == _c.LITERAL:
        return {value}
    if op == _c.IN and all(kind == _c.LITERAL for kind, _ in value):
        return {v for _, v in value}
    if op == _c.SUBPATTERN:
        return _first_chars(value[-1])
    return None


def _ambiguous(branches: list) -> bool:
    """True unless every branch starts with a known character no other branch starts with."""
    seen: set[int] = set()
    for branch in branches:
        first = _first_chars(branch)
        if first is None or first & seen:
            return True
        seen |= first
    return False


def _check(sub: Any, under_repeat: bool) -> None:
    for op, value in sub:
        if op in _REFUSED:
            raise UnsafePattern(_REFUSED[op])
        if op in _REPEATS:
            repeated = value[1] > 1
            if repeated and under_repeat:
                raise UnsafePattern("nested quantifiers (like (a+)+) can take exponential time")
            if repeated and _has_repeat(value[2]):
                raise UnsafePattern("nested quantifiers (like (a+)+) can take exponential time")
            _check(value[2], under_repeat or repeated)
            continue
        if op == _c.BRANCH and under_repeat and _ambiguous(value[1]):
            raise UnsafePattern(
                "an alternation under a quantifier whose branches can match the same text"
                " (like (a|a)* or (a|)*) can take exponential time"
            )
        for inner in _items(value):
            _check(inner, under_repeat)


@functools.lru_cache(maxsize=4096)
def cached(pattern: str) -> SafeRegex:
    """compile_safe for patterns already stored (and so already accepted): searches reuse them."""
    return compile_safe(pattern)


def compile_safe(pattern: str, *, field: str = "regex") -> SafeRegex:
    """Compile a user's pattern, or raise UnsafePattern/InvalidInput naming the problem."""
    if not isinstance(pattern, str) or not pattern:
        raise InvalidInput("a regex must be a non-empty string", field=field)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidInput(f"a regex is at most {MAX_PATTERN_CHARS} characters", field=field)
    try:
        parsed = _sre.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise InvalidInput(f"not a valid regex: {exc}", field=field) from exc
    try:
        _check(parsed, False)
    except UnsafePattern as exc:
        raise UnsafePattern(f"regex {pattern!r} refused: {exc.message}", field=field) from None
    options = re2.Options()
    options.max_mem = _MAX_PROGRAM_BYTES
    options.log_errors = False
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidInput(f"regex {pattern!r} is not supported: {reason}", field=field) from exc
    return SafeRegex(pattern, compiled)
