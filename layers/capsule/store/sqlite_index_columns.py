"""Change tracking for the warm index: the projects' versions, the rows changed since one, and
a whole project as the columns an index loads (:class:`~capsule.core.records.IndexColumns`), with the
derived data (term hashes, packed rows, facets) recomputed where a row lacks it."""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Iterator, Sequence

import numpy as np

from ..core.errors import Unavailable
from ..core.records import ChangeSet, IndexColumns
from ..search import terms
from ..search.index import pack_row, stable_key
from .sqlite_connection import SQLiteConnections
from .sqlite_rows import COLUMNS, facets, row_to_record

# Projects at least this large load their index with sign bits only; the vectors follow.
DEFER_VECTORS_FROM = 20_000


class SQLiteIndexColumns(SQLiteConnections):
    defer_vectors_from: int

    def change_markers(self, tenant: str, projects: Sequence[str] | None) -> dict[str, int]:
        sql, params = "SELECT name, version FROM projects WHERE tenant = ?", [tenant]
        if projects is not None:
            sql += f" AND name IN ({', '.join('?' * len(projects))})"
            params += list(projects)
        return {row["name"]: row["version"] for row in self._read(sql, params)}

    def changes_since(self, tenant: str, project: str, since: int, *, columns: bool = False) -> ChangeSet:
        with self._snapshot() as conn:
            row = conn.execute(
                "SELECT version, purged_version FROM projects WHERE tenant = ? AND name = ?", (tenant, project)
            ).fetchone()
            if row is None:
                return ChangeSet(version=0, reset=True)
            if since <= 0 or since < row["purged_version"] or since > row["version"]:
                if columns:
                    loaded, stale = self._index_columns(conn, tenant, project)
                else:
                    rows = conn.execute(
                        f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND project = ? AND deleted_at IS NULL "
                        "ORDER BY seq",
                        (tenant, project),
                    ).fetchall()
                    return ChangeSet(version=row["version"], changed=[row_to_record(r) for r in rows], reset=True)
            else:
                rows = conn.execute(
                    f"SELECT {COLUMNS} FROM memories WHERE tenant = ? AND project = ? AND version > ? ORDER BY seq",
                    (tenant, project, since),
                ).fetchall()
                loaded = None
        if loaded is not None:
            self._store_derived(stale)
            return ChangeSet(version=row["version"], columns=loaded, reset=True)
        changes = ChangeSet(version=row["version"])
        for r in rows:
            if r["deleted_at"] is None:
                changes.changed.append(row_to_record(r))
            else:
                changes.removed.append(r["id"])
        return changes

    def _index_columns(
        self, conn: sqlite3.Connection, tenant: str, project: str
    ) -> tuple[IndexColumns, list[tuple[str, tuple]]]:
        """Every active row of the project as the columns an index needs, in one read.

        A project of at least ``defer_vectors_from`` rows comes as packed rows (key, times,
        vector size, sign bits: :func:`capsule.search.index.pack_row`) without its vectors, which
        ``IndexColumns.deferred`` reads later: reading and placing 4 KB per row is most of the
        time a full load takes, and a first search needs only the sign bits and its
        candidates' vectors. A smaller one comes with its vectors, read in chunks, each
        chunk's vectors appended to one buffer, so they are held once.

        Derived data a row lacks or holds from an older version (term hashes made by another
        tokenizer version, the packed row of a row written before it was kept) is recomputed
        and returned as updates, to be stored for next time.
        """
        where = "WHERE tenant = ? AND project = ? AND deleted_at IS NULL"
        count = conn.execute(
            f"SELECT count(*) FROM memories INDEXED BY memories_load {where}", (tenant, project)
        ).fetchone()[0]
        defer = count >= self.defer_vectors_from
        cursor = conn.cursor()
        cursor.row_factory = None  # plain tuples: a Row per memory costs more than the read
        if defer:
            # Everything from the index memories_packed: the rows themselves (4 KB of vector
            # each) are read only for what a row lacks (content for stale term hashes, meta
            # where its facets were never kept), which SQLite looks up only when asked.
            columns = "id, packed"
            meta = "CASE WHEN facets IS NULL THEN '!' || meta ELSE nullif(facets, '') END"
            source = "FROM memories INDEXED BY memories_packed"
        else:
            columns = "id, sort_key, embedding, occurred_at, created_at"
            meta = "CASE WHEN meta = '{}' THEN NULL ELSE meta END"
            source = "FROM memories"
        cursor.execute(
            f"SELECT {columns}, model, CASE WHEN terms_version = ? THEN terms END, "
            f"CASE WHEN terms_version IS ? THEN NULL ELSE content END, helpful, unhelpful, {meta} "
            f"{source} {where} ORDER BY seq",
            (terms.TOKENIZER, terms.TOKENIZER, tenant, project),
        )
        out = IndexColumns([], [], bytearray(), [], [], [], [], [], [], [], [])
        packed: list[bytes | None] = []
        stale: list[tuple[str, tuple]] = []
        collecting = gc.isenabled()
        gc.disable()  # a collection every few hundred row tuples would scan them all again and again
        try:
            while chunk := cursor.fetchmany(4096):
                if defer:
                    ids, rows, *rest = zip(*chunk)
                    packed += rows
                    keys = None
                else:
                    ids, keys, blobs, occurred, created, *rest = zip(*chunk)
                    out.vectors += bytearray().join(b for b in blobs if b is not None)
                    out.vector_sizes += [0 if b is None else len(b) for b in blobs]
                    out.occurred += occurred
                    out.created += created
                models, hashed, contents, helpful, unhelpful, metas = rest
                hashed = list(hashed)
                if contents.count(None) != len(contents) or (keys is not None and None in keys):
                    keys = list(keys or [stable_key(i) for i in ids])
                    self._refresh(tenant, ids, keys, hashed, contents, stale)
                out.ids += ids
                if not defer:
                    out.keys += keys
                out.models += models
                out.terms += hashed
                out.helpful += helpful
                out.unhelpful += unhelpful
                if defer and metas.count(None) != len(metas) and any(m is not None and m[0] == "!" for m in metas):
                    metas = self._refacet(tenant, ids, metas, stale)
                out.metas += [None if meta is None else json.loads(meta) for meta in metas]
            if defer:
                self._repack(conn, tenant, out.ids, packed, stale)
                out.packed = bytearray().join(packed)
                out.packed_lengths = list(map(len, packed))
                out.deferred = _DeferredVectors(self, tenant, project)
        finally:
            if collecting:
                gc.enable()
        return out, stale

    @staticmethod
    def _refacet(
        tenant: str, ids: Sequence[str], metas: Sequence[str | None], stale: list[tuple[str, tuple]]
    ) -> list[str | None]:
        """Facets for rows written before they were kept (their whole meta came, marked "!")."""
        out: list[str | None] = []
        for memory_id, meta in zip(ids, metas):
            if meta is not None and meta[0] == "!":
                meta = facets(json.loads(meta[1:]))
                stale.append(
                    (
                        "UPDATE memories SET facets = ? WHERE tenant = ? AND id = ? AND facets IS NULL",
                        (meta, tenant, memory_id),
                    )
                )
            out.append(meta or None)
        return out

    @staticmethod
    def _repack(
        conn: sqlite3.Connection,
        tenant: str,
        ids: list[str],
        packed: list[bytes | None],
        stale: list[tuple[str, tuple]],
    ) -> None:
        """Packed rows for the rows that lack one (written before they were kept)."""
        missing = [i for i, row in enumerate(packed) if row is None] if None in packed else []
        for start in range(0, len(missing), 500):
            part = missing[start : start + 500]
            found = {
                row[0]: row[1:]
                for row in conn.execute(
                    "SELECT id, sort_key, occurred_at, created_at, embedding FROM memories WHERE tenant = ? "
                    f"AND id IN ({', '.join('?' * len(part))})",
                    (tenant, *[ids[i] for i in part]),
                )
            }
            for i in part:
                key, occurred, created, blob = found[ids[i]]
                vector = None if blob is None else np.frombuffer(blob, dtype="<f4")
                packed[i] = pack_row(stable_key(ids[i]) if key is None else key, occurred, created, vector)
                # Only where still missing: a vector set meanwhile came with its own packed row.
                stale.append(
                    (
                        "UPDATE memories SET packed = ? WHERE tenant = ? AND id = ? AND packed IS NULL",
                        (packed[i], tenant, ids[i]),
                    )
                )

    @staticmethod
    def _refresh(
        tenant: str,
        ids: Sequence[str],
        keys: list[int | None],
        hashed: list[bytes | None],
        contents: Sequence[str | None],
        stale: list[tuple[str, tuple]],
    ) -> None:
        """Tie-break keys and term hashes for rows that lack them or hold another tokenizer's."""
        for i, content in enumerate(contents):
            if keys[i] is None:
                keys[i] = stable_key(ids[i])
            if content is not None:
                hashed[i] = terms.encode(content)
                stale.append(
                    (
                        ("UPDATE memories SET terms = ?, terms_version = ?, sort_key = ? WHERE tenant = ? AND id = ?"),
                        (hashed[i], terms.TOKENIZER, keys[i], tenant, ids[i]),
                    )
                )

    def _store_derived(self, stale: list[tuple[str, tuple]]) -> None:
        """Keep recomputed term hashes and sign bits; derived data, so no version bump, and a
        busy database only means they are recomputed next time."""
        if not stale:
            return
        conn = self._conn()
        conn.execute("PRAGMA busy_timeout = 200")  # a search does not wait on another writer for this
        try:
            by_statement: dict[str, list[tuple]] = {}
            for sql, params in stale:
                by_statement.setdefault(sql, []).append(params)
            with self._write(wait_s=0.2) as conn:
                for sql, rows in by_statement.items():
                    conn.executemany(sql, rows)
        except Unavailable:
            pass
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")


class _DeferredVectors:
    """The vectors of one project, read when an index loaded with sign bits asks for them."""

    def __init__(self, store: SQLiteIndexColumns, tenant: str, project: str) -> None:
        self.store, self.tenant, self.project = store, tenant, project

    def some(self, ids: Sequence[str], model: str | None) -> dict[str, bytes]:
        # Forgotten rows too: an index may still hold one whose forgetting it has not read yet.
        found: dict[str, bytes] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            rows = self.store._read(
                # "+model": look the ids up by their unique key (tenant, id), not the model's range.
                f"SELECT id, embedding FROM memories WHERE tenant = ? AND +model IS ? AND embedding IS NOT NULL "
                f"AND id IN ({', '.join('?' * len(part))})",
                (self.tenant, model, *part),
            )
            found.update((row[0], row[1]) for row in rows)
        return found

    def chunks(self, model: str | None) -> Iterator[list[tuple[str, bytes]]]:
        try:
            cursor = self.store._conn().cursor()
            cursor.row_factory = None
            cursor.execute(
                "SELECT id, embedding FROM memories WHERE tenant = ? AND project = ? AND deleted_at IS NULL "
                "AND model IS ? AND embedding IS NOT NULL ORDER BY seq",
                (self.tenant, self.project, model),
            )
            while chunk := cursor.fetchmany(2048):
                yield chunk
        except sqlite3.Error as exc:
            raise Unavailable(f"the database could not be read: {exc}") from exc
