"""One MongoDB client per process, with timeouts on every call; driver errors become ours.

A Lambda container keeps module state between warm invocations, so the client (and its
connection pool) is cached here by URI and reused: opening one costs a TLS handshake and
server selection, which would otherwise be paid on every request.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..core import deadline
from ..core.errors import Conflict, Unavailable

# Every operation gets a deadline (``timeoutMS`` makes the driver send ``maxTimeMS`` and bound
# each socket wait), so a stuck cluster gives a 503 within seconds, not a Lambda timeout. Inside
# a request with a deadline (capsule.core.deadline) each call gets what is left of it instead.
CLIENT_OPTIONS: dict[str, Any] = {
    "serverSelectionTimeoutMS": 5_000,
    "connectTimeoutMS": 5_000,
    "socketTimeoutMS": 10_000,
    "timeoutMS": 10_000,
    "retryWrites": True,
    "retryReads": True,
    "appname": "capsule-memory",
    "tz_aware": True,
}
# Connections per process: the pool, plus the driver's monitoring, which the pool size does not
# cover. pymongo keeps one monitoring connection to *every* member of the replica set (a
# heartbeat each 10 s while the process runs), and in its streaming mode a second per member for
# round-trip times. A Lambda container serves one request at a time, plus the one background
# worker (capsule.service.background) that may read beside it, so its pool is 2, all to the primary
# (every read and write goes there), and its monitoring polls: one connection per member. On
# Atlas's 3-member replica set that is at most 3 + 2 = 5 connections per warm container, 3 of
# them to the primary (1 monitor + 2 pooled; the second only once the worker read beside a
# request, as minPoolSize is 0). A container frozen between requests keeps what it had open, so
# count warm containers, not concurrent requests: Atlas's connection limits are per member, and
# N warm containers hold at most 3N on the primary. ``maxConnecting`` 1: a cold
# container opens its pooled connections one TLS handshake at a time instead of two at once.
# A server process (capsule serve) keeps pymongo's usual pool of 10 for its threads and its
# streaming monitor (2 per member): 3 x 2 + 10 = 16 at most. An option in the URI wins.
LAMBDA_POOL_SIZE = 2
SERVER_POOL_SIZE = 10
IDLE_CLOSE_MS = 60_000  # a pooled connection idle this long is closed, not reused
LAMBDA_OPTIONS: dict[str, Any] = {"maxPoolSize": LAMBDA_POOL_SIZE, "maxConnecting": 1, "serverMonitoringMode": "poll"}
MONITOR_CONNECTIONS = {"poll": 1, "stream": 2}  # per replica-set member


def connections_per_process(members: int, pool: int, monitoring: str) -> tuple[int, int]:
    """(all, to the primary) connections one process holds at most: a monitor (or two) per
    member, and the pool to the primary (the only member this service reads from)."""
    monitors = MONITOR_CONNECTIONS[monitoring]
    return members * monitors + pool, monitors + pool


def pool_options(uri: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The pool settings for ``uri`` in this process (Lambda sets AWS_LAMBDA_FUNCTION_NAME)."""
    environ = os.environ if environ is None else environ
    given = {key.lower() for key, _ in parse_qsl(urlsplit(uri).query)}
    options: dict[str, Any] = {} if "maxidletimems" in given else {"maxIdleTimeMS": IDLE_CLOSE_MS}
    wanted = LAMBDA_OPTIONS if environ.get("AWS_LAMBDA_FUNCTION_NAME") else {"maxPoolSize": SERVER_POOL_SIZE}
    options.update({key: value for key, value in wanted.items() if key.lower() not in given})
    return options


# Atlas's AWS IAM authentication: with CAPSULE_MONGODB_AUTH=aws (infra, -c atlas_iam_auth=true) the
# function signs in as its execution role (the Lambda runtime's AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
# and AWS_SESSION_TOKEN, read by pymongo-auth-aws), so the URI holds no user and no password.
AUTH_VARIABLE = "CAPSULE_MONGODB_AUTH"
AWS_AUTH_OPTIONS: dict[str, Any] = {"authMechanism": "MONGODB-AWS", "authSource": "$external"}


def auth_options(uri: str, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The authentication options for ``uri`` in this process: none unless ``CAPSULE_MONGODB_AUTH``
    is ``aws``; then MONGODB-AWS (unless the URI says it already), and a URI with a user or a
    password, or another mechanism, is refused rather than used."""
    environ = os.environ if environ is None else environ
    mode = environ.get(AUTH_VARIABLE, "").strip().lower()
    if mode in ("", "uri"):
        return {}
    if mode != "aws":
        raise Unavailable(f"{AUTH_VARIABLE}={mode!r}: expected aws, or unset to use the URI's own credentials")
    parts = urlsplit(uri)
    if "@" in parts.netloc:
        raise Unavailable(
            f"{AUTH_VARIABLE}=aws: the MongoDB URI must hold no user or password (the function's role signs in)"
        )
    given = {key.lower(): value for key, value in parse_qsl(parts.query)}
    if given.get("authmechanism", "MONGODB-AWS").upper() != "MONGODB-AWS":
        raise Unavailable(f"{AUTH_VARIABLE}=aws: the MongoDB URI names another authMechanism")
    return {key: value for key, value in AWS_AUTH_OPTIONS.items() if key.lower() not in given}


OPERATION_S = CLIENT_OPTIONS["timeoutMS"] / 1000

_clients: dict[str, Any] = {}
_lock = threading.Lock()


def shared_client(uri: str, **options: Any) -> Any:
    """The process's client for ``uri``, created on first use."""
    from pymongo import MongoClient  # the 'mongo' extra

    with _lock:
        client = _clients.get(uri)
        if client is None:
            chosen = {**CLIENT_OPTIONS, **pool_options(uri), **auth_options(uri), **options}
            try:
                client = MongoClient(uri, **chosen)
            except Exception as exc:  # ConfigurationError, InvalidURI, ValueError: a bad setting
                raise Unavailable(f"cannot use the MongoDB URI: {type(exc).__name__}: {exc}") from exc
            _clients[uri] = client
        return client


def drop_clients() -> None:
    """Close every cached client (tests, or a process about to fork)."""
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()


@contextmanager
def guarded(what: str) -> Iterator[None]:
    """Turn driver errors into :class:`Unavailable` (or :class:`Conflict` for a duplicate key)."""
    from pymongo.errors import BulkWriteError, DuplicateKeyError, PyMongoError

    try:
        with _within_deadline(what):
            yield
    except DuplicateKeyError as exc:
        raise Conflict(f"{what}: the id is already taken") from exc
    except BulkWriteError as exc:
        codes = {error.get("code") for error in exc.details.get("writeErrors", [])}
        if codes == {11000}:
            raise Conflict(f"{what}: an id is already taken") from exc
        raise Unavailable(f"MongoDB could not {what}: {_describe(exc)}") from exc
    except PyMongoError as exc:
        raise Unavailable(f"MongoDB could not {what}: {_describe(exc)}") from exc


@contextmanager
def _within_deadline(what: str) -> Iterator[None]:
    """``pymongo.timeout`` of what the request has left, when that is less than the client's
    own per-operation timeout: the driver then sends it as ``maxTimeMS`` and bounds server
    selection, socket waits and retries (a transaction's too) by it. With more left, the client's
    own timeouts already end first (and keep their quicker server selection, which a
    ``pymongo.timeout`` would replace by the whole budget)."""
    left = deadline.remaining()
    if left is None or left >= OPERATION_S:
        yield
        return
    import pymongo

    with pymongo.timeout(deadline.budget(OPERATION_S, what=f"ask MongoDB to {what}")):
        yield


def _describe(exc: Exception) -> str:
    """The kind of failure, without the driver's text: it names cluster hosts, and this
    message reaches API callers (the full error stays chained as ``__cause__``)."""
    from pymongo.errors import ConnectionFailure, ExecutionTimeout, OperationFailure, WTimeoutError

    if isinstance(exc, (ExecutionTimeout, WTimeoutError)) or "timed out" in str(exc).lower():
        return f"{type(exc).__name__} (the cluster did not answer in time)"
    if isinstance(exc, ConnectionFailure):
        return f"{type(exc).__name__} (the cluster cannot be reached)"
    if isinstance(exc, OperationFailure):
        return f"{type(exc).__name__} (code {exc.code})"
    return type(exc).__name__


def supports_transactions(client: Any) -> bool:
    """True on a replica set or sharded cluster (Atlas); False on a standalone or mongomock."""
    from pymongo.errors import PyMongoError

    try:
        hello = client.admin.command("hello")
    except NotImplementedError:  # mongomock has no such command, and no transactions
        return False
    except PyMongoError as exc:
        raise Unavailable(f"MongoDB is unreachable: {_describe(exc)}") from exc
    return bool(hello.get("setName")) or hello.get("msg") == "isdbgrid"
