"""``Idempotency-Key`` for the writes that content does not deduplicate.

A retried write must not do its work twice: a client that lost the answer to a feedback, an
apply, a link or a revert (a timeout, a dropped connection, a 503 from the gateway after the
function committed) sends the request again with the same ``Idempotency-Key`` header and gets
the first answer back (``Idempotent-Replayed: true``), not a second vote or a second version.

- The key is the caller's: 1 to 255 printable ASCII characters, kept **per tenant** (another
  tenant's key of the same text is another key) for :data:`TTL_S` after the first answer.
- The same key with another request (route, path, query or body: the body compared as parsed
  JSON, so key order and spacing do not matter) is refused with 422 naming the header.
- While the first request runs, the same key answers 409 with ``Retry-After``; a claim left
  by a function that died is taken over after the route's timeout (the lease).
- Only a success is kept: an error (4xx or 5xx) changed nothing, so the key is released and a
  retry runs the request again.

Powertools' idempotency utility persists to DynamoDB or Redis, neither of which the stack
has; the keys live in the deployment's own store instead (capsule.store.idempotency: SQLite
embedded, MongoDB hosted), in the memory store's database.

Routes: :data:`ROUTES` (the header is declared on them in the OpenAPI document and ignored
elsewhere, like any header a route does not read). Store, ingest and capture are left out:
their memories are deduplicated by content, and the rest are reads, state changes that
give the same result twice (pin, forget, restore) or puts of a whole value.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from capsule.core.errors import Conflict, InvalidInput
from capsule.store.idempotency import COMPLETED, IdempotencyStore

from . import routes

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
FIELD = "idempotency-key"
MAX_KEY_CHARS = 255
TTL_S = 24 * 3600  # how long an answer is kept for its key
LEASE_MARGIN_S = 5  # beyond the route's timeout, before a claim left by a dead function is taken over
PURGE_EVERY = 200  # claims between two sweeps of expired keys (MongoDB's TTL index sweeps on its own)

# The writes whose repetition does the work twice (a second vote, version, outcome, key, job).
ROUTES: frozenset[str] = frozenset(
    {
        "feedback",
        "update",
        "revert",
        "candidate_approve",
        "candidate_reject",
        "rotate_data_key",
        "solution_create",
        "solution_import",
        "solution_apply",
        "pattern_link",
        "detect_patterns",
        "import_data",
        "sync_apply",
    }
)


class InProgress(Conflict):
    code = "idempotency_in_progress"
    retry_after_s = 1


def key_of(event: dict[str, Any]) -> str | None | InvalidInput:
    """The request's key; None when it sends none; the error when it is not a valid key."""
    values = [v for k, v in (event.get("headers") or {}).items() if k.lower() == FIELD]
    if not values:
        return None
    key = str(values[0])
    if not key or len(key) > MAX_KEY_CHARS or not all("!" <= c <= "~" for c in key) or "," in key:
        return InvalidInput(
            f"the {HEADER} header must be 1 to {MAX_KEY_CHARS} printable ASCII characters, sent once "
            f"(got {len(key)} characters)",
            field=FIELD,
        )
    return key


def fingerprint(route: routes.Route, event: dict[str, Any], body: dict[str, Any] | None) -> str:
    """The request a key stands for: route, path, query string and body (as parsed JSON)."""
    if body is not None:
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    else:
        text = str(event.get("body") or "")
    parts = (route.name, str(event.get("rawPath") or ""), str(event.get("rawQueryString") or ""), text)
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


_stores: dict[int, IdempotencyStore] = {}
_lock = threading.Lock()
_claims = 0


def store_for(memories: Any) -> IdempotencyStore:
    """The keys' store in the same database as a memory store, migrated once per process."""
    memories = getattr(memories, "backing_store", memories)  # a sealed store: its own database
    with _lock:
        found = _stores.get(id(memories))
        if found is not None:
            return found
        from capsule.store.sqlite import SQLiteStore

        made: IdempotencyStore
        if isinstance(memories, SQLiteStore):
            from capsule.store.sqlite_idempotency import SQLiteIdempotencyStore

            made = SQLiteIdempotencyStore(memories)
        else:
            from capsule.store.mongo_idempotency import MongoIdempotencyStore

            made = MongoIdempotencyStore(memories.db)
        made.migrate()
        _stores.clear()  # one service per process: a test's next service replaces the last one
        _stores[id(memories)] = made
        return made


def replayed(response: dict[str, Any]) -> dict[str, Any]:
    return {**response, "headers": {**(response.get("headers") or {}), REPLAYED_HEADER: "true"}}


def once(
    route: routes.Route,
    key: str,
    tenant: str,
    event: dict[str, Any],
    body: dict[str, Any] | None,
    store: IdempotencyStore,
    run: Callable[[], dict[str, Any]],
    *,
    clock: Callable[[], float] = time.time,
    warn: Callable[[str], None] = lambda message: None,
) -> dict[str, Any]:
    """The answer to a request sent with ``key``: the first one's when it has run, else ``run()``'s.
    Raises InvalidInput (another request under this key) or InProgress (it is still running)."""
    global _claims
    printed = fingerprint(route, event, body)
    held = store.claim(tenant, key, printed, now=clock(), lease_s=route.timeout_s + LEASE_MARGIN_S)
    if held is not None:
        if held.fingerprint != printed:
            raise InvalidInput(
                f"this {HEADER} was used for another request (route, path, query or body) in the last "
                f"{TTL_S // 3600} hours; send a new key for a new request",
                field=FIELD,
            )
        if held.status == COMPLETED and held.response is not None:
            return replayed(held.response)
        raise InProgress(f"a request with this {HEADER} is still running; retry after {InProgress.retry_after_s} s")
    try:
        response = run()
    except BaseException:
        store.release(tenant, key, printed)
        raise
    if 200 <= int(response.get("statusCode", 500)) < 300:
        try:
            store.complete(tenant, key, printed, response, now=clock(), ttl_s=TTL_S)
        except Exception as exc:  # the work is done: answer it; the claim's lease ends on its own
            warn(f"the answer to an idempotency key could not be kept: {exc}")
    else:
        try:
            store.release(tenant, key, printed)
        except Exception as exc:
            warn(f"an idempotency key could not be released: {exc}")
    _claims += 1
    if _claims % PURGE_EVERY == 0:
        try:
            store.purge(clock())
        except Exception as exc:
            warn(f"expired idempotency keys could not be removed: {exc}")
    return response
