"""mongomock made strict in two ways the contract suite's "mongomock-strict" backend needs.

- :class:`IndexedCollection`: every query the store issues (filter and sort) must be served by
  one of the store's declared indexes (``mongo.INDEXES``): its equality fields lead the index,
  its sort follows them (or a range bounds the rows sorted). A query no index serves fails the
  test that issued it, so the whole contract suite checks "an index for every sort and filter".
- :class:`TxnClient`: pymongo's session and transaction API for mongomock, enforced. Inside
  ``with_transaction`` every operation must carry the session (one without it would run outside
  the transaction on a server); the callback runs twice, the first attempt rolled back as a
  write conflict would (``TransientTransactionError``: the driver re-runs the callback), so a
  body that is not safe to re-run fails; an exception rolls everything back. Transactions run
  one at a time, a valid serialisation of what a server allows; what this cannot show is the
  server's own conflict detection between concurrent transactions.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

LIVENESS = {"active", "pending"}  # true of nearly every memory: filtering on them discards few rows
# Search filters applied within an indexed scope (small scopes only: large ones use Atlas).
RESIDUAL = {"meta.component", "meta.category", "meta.tags", "path", "created_at", "lock", "lock_until"}
UNBOUNDED = {"$ne", "$nin", "$not", "$nor"}
_QUERIES = {
    "find",
    "find_one",
    "count_documents",
    "update_one",
    "update_many",
    "delete_many",
    "delete_one",
    "find_one_and_update",
    "find_one_and_delete",
    "replace_one",
    "distinct",
    "aggregate",
}


def _split(query: dict[str, Any]) -> list[dict[str, Any]]:
    """The query as branches without $or (each branch with the top-level fields)."""
    top = {k: v for k, v in query.items() if k not in ("$or", "$and")}
    for clause in query.get("$and", []):
        top.update(clause)
    if "$or" not in query:
        return [top]
    return [{**top, **branch} for branch in query["$or"]]


def _kinds(branch: dict[str, Any]) -> tuple[set[str], set[str], set[str]]:
    eq, ranges, bad = set(), set(), set()
    for key, value in branch.items():
        if isinstance(value, dict) and any(k.startswith("$") for k in value):
            ops = set(value)
            if ops & UNBOUNDED:
                bad.add(key)
            elif ops <= {"$in", "$all"} or ops == {"$type"}:
                eq.add(key)
            else:
                ranges.add(key)
        else:
            eq.add(key)
    return eq, ranges, bad


def _implied(partial: dict[str, Any], branch: dict[str, Any]) -> bool:
    for key, want in partial.items():
        have = branch.get(key)
        if have != want and not (isinstance(want, dict) and isinstance(have, dict) and want.items() <= have.items()):
            return False
    return True


def served(
    indexes: list[tuple[list[tuple[str, Any]], dict[str, Any]]],
    query: dict[str, Any],
    sort: list[tuple[str, Any]] | None,
) -> bool:
    sort_keys = [k for k, _ in sort or []]
    for branch in _split(query):
        if "$text" in branch:
            continue
        eq, ranges, bad = _kinds(branch)
        if not any(_serves(keys, options, branch, eq, ranges, bad, sort_keys) for keys, options in indexes):
            return False
    return True


def _serves(keys, options, branch, eq, ranges, bad, sort_keys) -> bool:
    if not _implied(options.get("partialFilterExpression", {}), branch):
        return False
    names = [k for k, _ in keys if not (k in LIVENESS and k in eq)]
    if options.get("unique") and {k for k, _ in keys} <= eq:
        return True
    needed = eq - LIVENESS - RESIDUAL
    lead = names[: len(needed)]
    if set(lead) != needed or set(lead) & bad:
        return False
    rest = names[len(needed) :]
    if not needed and not (rest and rest[0] in ranges | set(sort_keys)):
        return False  # nothing bounds the read: a scan of the collection
    if sort_keys and rest[: len(sort_keys)] != sort_keys and not (rest and rest[0] in ranges):
        return False
    return True


class UnindexedQuery(AssertionError):
    pass


class IndexedCollection:
    def __init__(self, inner: Any, indexes: list, txn: TxnClient, created: list | None = None) -> None:
        self._inner, self._indexes, self._txn = inner, [([("_id", 1)], {"unique": True}), *indexes], txn
        self._created = created if created is not None else []
        self.name = inner.name

    def create_index(self, keys: Any, **options: Any) -> Any:
        """An index the code creates (the learning store's own, say) serves queries as a declared one does."""
        name = self._inner.create_index(keys, **options)
        spec = ([(k, v) for k, v in keys], options)
        self._created.append(spec)
        self._indexes.append(spec)
        return name

    def __getattr__(self, attr: str) -> Any:
        method = getattr(self._inner, attr)
        if not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            session = kwargs.pop("session", None)
            self._txn.check(session, f"{self.name}.{attr}")
            if attr in _QUERIES:
                self._check(attr, args, kwargs)
            return method(*args, **kwargs)

        return call

    def _check(self, attr: str, args: tuple, kwargs: dict) -> None:
        if attr == "aggregate":
            first = args[0][0] if args and args[0] else {}
            query, sort = first.get("$match", {}), None
        elif attr == "distinct":
            query, sort = (args[1] if len(args) > 1 else kwargs.get("filter")) or {}, None
            if not query and any(keys[0][0] == args[0] for keys, _ in self._indexes):
                return  # a distinct over an index's leading key reads the index
        else:
            query = (args[0] if args else kwargs.get("filter")) or {}
            sort = kwargs.get("sort")
        if not served(self._indexes, query, sort):
            raise UnindexedQuery(f"{self.name}.{attr}({query}, sort={sort}) has no index serving it")


class TxnSession:
    def __init__(self, client: TxnClient) -> None:
        self.client, self.in_transaction, self.ended = client, False, False

    def __enter__(self) -> TxnSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.ended = True

    def with_transaction(self, callback: Any, *args: Any, **kwargs: Any) -> Any:
        if self.ended:
            raise AssertionError("with_transaction on an ended session")
        with self.client.lock:
            for attempt in (1, 2):
                saved = self.client.snapshot()
                self.in_transaction, self.client.local.session = True, self
                try:
                    result = callback(self)
                except BaseException:
                    self.client.restore(saved)
                    raise
                finally:
                    self.in_transaction, self.client.local.session = False, None
                if attempt == 1:  # a write conflict at commit: the driver runs the callback again
                    self.client.restore(saved)
                    self.client.retried += 1
            return result


class TxnClient:
    """A mongomock client with enforced sessions (see the module's docstring)."""

    def __init__(self, mock_client: Any) -> None:
        self._mock, self.lock, self.local, self.retried = mock_client, threading.RLock(), threading.local(), 0
        self.admin = mock_client.admin
        self.databases: dict[str, StrictDatabase] = {}

    def start_session(self, **_: Any) -> TxnSession:
        return TxnSession(self)

    def check(self, session: Any, what: str) -> None:
        active = getattr(self.local, "session", None)
        if active is not None and session is not active:
            raise AssertionError(f"{what} ran outside the transaction it was called in")
        if session is not None and not session.in_transaction:
            raise AssertionError(f"{what} passed a session with no transaction running")

    def snapshot(self) -> dict[str, dict[str, list[dict]]]:
        return {
            name: {c: copy.deepcopy(list(db._mock[c].find())) for c in db._mock.list_collection_names()}
            for name, db in self.databases.items()
        }

    def restore(self, saved: dict[str, dict[str, list[dict]]]) -> None:
        for name, collections in saved.items():
            mock = self.databases[name]._mock
            for collection in mock.list_collection_names():
                mock[collection].delete_many({})
                if collections.get(collection):
                    mock[collection].insert_many(copy.deepcopy(collections[collection]))

    def close(self) -> None:
        self._mock.close()


class StrictDatabase:
    def __init__(self, client: TxnClient, mock_db: Any, indexes: dict[str, list]) -> None:
        self.client, self._mock, self.name = client, mock_db, mock_db.name
        self._indexes = indexes
        self._created: dict[str, list] = {}  # indexes made through create_index, by collection
        client.databases[self.name] = self

    def list_collection_names(self) -> list[str]:
        return self._mock.list_collection_names()

    def __getitem__(self, name: str) -> IndexedCollection:
        created = self._created.setdefault(name, [])
        return IndexedCollection(self._mock[name], [*self._indexes.get(name, []), *created], self.client, created)

    get_collection = __getitem__
