"""What remains of the invocation: one deadline per request, read by every call that waits.

A Lambda function is killed at its timeout, and a killed function answers nothing: not the
documented fallback (a memory stored as pending, a search by keyword) nor a 503. So the handler
sets the deadline from the invocation (``context.get_remaining_time_in_millis()`` less
:data:`RESPONSE_MARGIN_S`) and each wait takes only what is left of it:

- the embedder (:func:`for_embedder`) leaves :data:`FALLBACK_RESERVE_S` for the fallback that
  follows a failed embedding (the pending write, the keyword search);
- each database call runs under ``pymongo.timeout`` of what is left (``mongo_client.guarded``),
  so the driver sends ``maxTimeMS`` and bounds its socket waits and retries by it.

Without a deadline (the CLI, tests, ``capsule serve``) every call keeps its own timeout.
The deadline lives in a context variable: each request (thread, task) has its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .errors import Unavailable

RESPONSE_MARGIN_S = 0.5  # building and returning the response after the last call gives up
FALLBACK_RESERVE_S = 2.0  # kept back from the embedder for the fallback's own database calls
MIN_CALL_S = 0.05  # less than this left: the call is not started

_deadline: ContextVar[float | None] = ContextVar("capsule_deadline", default=None)


@contextmanager
def within(seconds: float | None, *, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """Everything inside must finish within ``seconds`` (None: no deadline); nests to the earlier."""
    if seconds is None:
        yield
        return
    at = clock() + seconds
    current = _deadline.get()
    token = _deadline.set(at if current is None else min(at, current))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining(*, clock: Callable[[], float] = time.monotonic) -> float | None:
    """Seconds left, or None when there is no deadline."""
    at = _deadline.get()
    return None if at is None else at - clock()


def budget(cap: float, *, reserve: float = 0.0, what: str = "call") -> float:
    """The timeout for one call: ``cap``, or less when the deadline (less ``reserve``) is nearer.
    Raises :class:`Unavailable` when no useful time is left, so the caller falls back now."""
    left = remaining()
    if left is None:
        return cap
    left -= reserve
    if left < MIN_CALL_S:
        raise Unavailable(f"no time left in this request to {what}")
    return min(cap, left)


def for_embedder(cap: float) -> float:
    return budget(cap, reserve=FALLBACK_RESERVE_S, what="embed")


def from_lambda_context(context: object) -> float | None:
    """The seconds a handler may use: the invocation's remaining time less the margin."""
    get = getattr(context, "get_remaining_time_in_millis", None)
    if get is None:
        return None
    return max(0.0, get() / 1000.0 - RESPONSE_MARGIN_S)
