"""The redact job: memories stored before the current secret rules, swept by them.

Every memory of every tenant (forgotten and superseded ones too: they can be restored and are
exported), a page at a time, with the kept versions of the page's memories, passes its project's
policies as a store's text does (:mod:`capsule.guard.stored`; ``refuse`` redacts here: what is
stored cannot be refused). Where something is redacted:

* the memory's row is written anew (content, explanation, meta, a new sha256; keyword terms and
  every derived column follow, as a sync's write) under the project's next version, so warm
  search indexes reload it; its vector is made again from the redacted text (or, with the
  embedder down, it is ``pending_embedding`` and the backfill job embeds it);
* its old versions are rewritten in place (same numbers and times, redacted texts);
* one audit record ``redact`` by ``guard`` says which kinds were redacted in which fields of the
  memory and of which versions: never a value.

Idempotent: a redacted text holds placeholders the rules do not match, so a second run finds
nothing to write. A sweep that finished under the current rules (the fingerprint of the guard's
sources) is not run again until the rules change; a run stopped at its budget resumes at the
tenant and page it reached. A row changed by someone else between the read and the write is left
to the next sweep (the sweep is then not marked finished).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core import deadline
from ..core.errors import CapsuleError, Unavailable
from ..core.records import AuditRecord, MemoryRecord
from ..guard import stored
from ..guard.policy import Policies
from ..service.context import text_to_embed
from ..store.redaction import redaction_store
from ..store.sides import governance_store, sync_store, transfer_store

ACTION = "redact"  # the audit action (capsule.governance.audit lists the others)
ACTOR = "guard"
RESERVE_S = 20.0  # a page is not started with less time left than this
_SOURCES = ("rules.py", "detect.py", "checks.py", "policy.py", "stored.py")


def rules_fingerprint() -> str:
    """What the rules are: a hash of the guard's sources (a change re-runs the sweep)."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in _SOURCES:
        try:
            digest.update((here / name).read_bytes())
        except OSError:  # shipped without sources: the table's facts stand for them
            from ..guard.rules import RULES

            digest.update(repr([(r.kind, r.pattern, r.lo, r.hi) for r in RULES]).encode())
    return digest.hexdigest()[:16]


@dataclass
class SweepReport:
    complete: bool
    counts: dict[str, int]
    state: dict[str, Any]
    explanation: str
    kinds: set[str] = field(default_factory=set)


class Sweep:
    def __init__(
        self,
        memories: Any,
        embedder: Any,
        *,
        policies: Callable[[str, str], Policies],
        clock: Callable[[], Any],
        session_words: int = 60,
    ) -> None:
        self.memories, self.embedder, self.clock = memories, embedder, clock
        self.session_words = session_words
        self._policy_of = policies
        self._policies: dict[tuple[str, str], Policies] = {}
        self._sealer = getattr(memories, "sealer", None)
        self.counts = {"scanned": 0, "redacted": 0, "versions": 0, "embedded": 0, "pending": 0, "skipped": 0}
        self.kinds: set[str] = set()
        self._written: set[str] = set()

    # ---- the run -----------------------------------------------------------------

    def run(self, state: dict[str, Any], *, max_memories: int, page: int) -> SweepReport:
        rules = rules_fingerprint()
        if state.get("rules") == rules and state.get("done"):
            return SweepReport(
                True,
                dict(self.counts),
                state,
                "Every memory was swept under the current secret "
                "rules already; new writes are guarded on the way in. Nothing to do.",
            )
        if state.get("rules") != rules:
            state = {"rules": rules, "tenant": None, "after": None, "retry": False}
        transfer = transfer_store(self.memories)
        for tenant in self.memories.tenants():
            if state["tenant"] is not None and tenant < state["tenant"]:
                continue
            after = state["after"] if tenant == state["tenant"] else None
            for rows in transfer.memory_pages(tenant, None, page=page, after=after):
                state["retry"] = self._page(tenant, [r for _, r in rows]) or state["retry"]
                self.counts["scanned"] += len(rows)
                state = {**state, "tenant": tenant, "after": rows[-1][0]}
                if self.counts["scanned"] >= max_memories or not self._time_left():
                    return self._report(False, state)
            state = {**state, "tenant": tenant + "\x00", "after": None}  # the next tenant in order
        done = not state["retry"]
        state = {"rules": rules, "tenant": None, "after": None, "retry": False, "done": done}
        return self._report(done, state)

    @staticmethod
    def _time_left() -> bool:
        left = deadline.remaining()
        return left is None or left >= RESERVE_S

    def _report(self, complete: bool, state: dict[str, Any]) -> SweepReport:
        c = self.counts
        text = (
            f"Swept {c['scanned']} memories by the current secret rules: redacted {c['redacted']} memories and "
            f"{c['versions']} old versions"
        )
        text += f" ({', '.join(sorted(self.kinds))}), each audited as '{ACTION}'" if self.kinds else ""
        text += f"; re-embedded {c['embedded']}" if c["embedded"] else ""
        if c["pending"]:
            text += f"; {c['pending']} left pending_embedding (the embedder was unavailable) for the backfill job"
        if c["skipped"]:
            text += (
                f"; {c['skipped']} skipped (sealed under a key not available here, or changed during the sweep)"
                " for the next sweep"
            )
        text += "." if complete else "; stopped at the budget, the next run continues where this one stopped."
        return SweepReport(complete, dict(c), state, text, set(self.kinds))

    # ---- one page ------------------------------------------------------------------

    def _policies_for(self, tenant: str, project: str) -> Policies:
        key = (tenant, project)
        if key not in self._policies:
            self._policies[key] = stored.for_sweep(self._policy_of(tenant, project))
        return self._policies[key]

    def _page(self, tenant: str, rows: list[MemoryRecord]) -> bool:
        """Redact what the page holds; True when something was left for a later sweep."""
        left = False
        records: dict[str, MemoryRecord] = {}
        for row in rows:
            opened = self._open(row)
            if opened is None:
                left = True
                continue
            records[row.id] = opened
        found: dict[str, dict[str, set[str]]] = {}  # memory id -> where -> kinds
        changed: dict[str, MemoryRecord] = {}
        for memory_id, record in records.items():
            after, cleaned = stored.clean_memory(record, self._policies_for(tenant, record.project))
            if cleaned.changed:
                changed[memory_id] = after
                found[memory_id] = dict(cleaned.where)
        versions = self._versions(tenant, records, found)
        if changed:
            left = self._write_memories(tenant, rows, changed) or left
        if versions:
            self.counts["versions"] += redaction_store(self.memories).rewrite_versions(tenant, versions)
        for memory_id, where in found.items():
            if memory_id in changed and memory_id not in self._written:
                continue  # not written (changed meanwhile): audited when a later sweep writes it
            self._audit(records[memory_id], where)
        return left

    def _versions(
        self, tenant: str, records: dict[str, MemoryRecord], found: dict[str, dict[str, set[str]]]
    ) -> list[Any]:
        out = []
        for version in redaction_store(self.memories).versions_of(tenant, list(records)):
            opened = self._open_version(version)
            if opened is None:
                continue
            project = records[version.memory_id].project if version.memory_id in records else version.project
            after, cleaned = stored.clean_version(opened, self._policies_for(tenant, project))
            if cleaned.changed:
                out.append(self._seal_version(after, sealed=opened is not version))
                where = found.setdefault(version.memory_id, {})
                for name, kinds in cleaned.where.items():
                    where[f"version {version.number} {name}"] = kinds
        return out

    def _write_memories(self, tenant: str, rows: list[MemoryRecord], changed: dict[str, MemoryRecord]) -> bool:
        """Embed and write the redacted rows not changed since they were read; True when one was."""
        self._written = set()
        sync = sync_store(self.memories)
        now = sync.current(tenant, list(changed))
        read = {r.id: r for r in rows}
        fresh = {i: r for i, r in changed.items() if i in now and _same_row(now[i][1], read[i])}
        self.counts["skipped"] += len(changed) - len(fresh)
        self._embed(list(fresh.values()))
        by_project: dict[str, list[MemoryRecord]] = {}
        for record in fresh.values():
            by_project.setdefault(record.project, []).append(self._seal(record))
        for project, records in by_project.items():
            sync.replace_memories(tenant, project, records)
        self._written = set(fresh)
        self.counts["redacted"] += len(fresh)
        return len(fresh) < len(changed)

    def _embed(self, records: list[MemoryRecord]) -> None:
        wanted = [r for r in records if r.status == "pending_embedding"]
        if not wanted:
            return
        try:
            vectors = self.embedder.embed(
                [text_to_embed(self.memories, r, max_words=self.session_words) for r in wanted]
            )
        except Unavailable:
            self.counts["pending"] += len(wanted)
            return
        for record, vector in zip(wanted, vectors):
            record.embedding, record.model, record.status = vector, self.embedder.model_id, "ready"
        self.counts["embedded"] += len(wanted)

    def _audit(self, record: MemoryRecord, where: dict[str, set[str]]) -> None:
        kinds = set().union(*where.values())
        self.kinds |= kinds
        reason = (
            f"redacted by the secret rules {rules_fingerprint()} (secrets policy of project "
            f"'{record.project}'): {stored.where_said(where)}"
        )
        if any(not name.startswith("version") for name in where) and "content" in where:
            reason += "; re-embedded from the redacted text"
        governance_store(self.memories).add_audit(
            AuditRecord(
                tenant=record.tenant,
                memory_id=record.id,
                project=record.project,
                action=ACTION,
                actor=ACTOR,
                reason=reason,
                at=self.clock(),
            )
        )

    # ---- sealed rows (capsule.crypto) -------------------------------------------------

    def _open(self, row: MemoryRecord) -> MemoryRecord | None:
        if self._sealer is None:
            return row
        try:
            return self._sealer.open(row)
        except CapsuleError:  # a tenant's own key that is not here now
            self.counts["skipped"] += 1
            return None

    def _seal(self, record: MemoryRecord) -> MemoryRecord:
        if self._sealer is None:
            return record
        return self._sealer.seal(record) if getattr(record, "sealed", "") else self.memories.seal_if_wanted(record)

    def _open_version(self, version: Any) -> Any:
        if self._sealer is None or not stored._sealed(version.content):
            return version
        try:
            opened = self._sealer.open(_as_record(version))
        except CapsuleError:
            self.counts["skipped"] += 1
            return None
        return replace(version, content=opened.content, meta=opened.meta, explanation=opened.explanation)

    def _seal_version(self, version: Any, *, sealed: bool) -> Any:
        if not sealed:
            return version
        closed = self._sealer.seal(_as_record(version))  # type: ignore[union-attr]  # sealed: there is a sealer
        return replace(version, content=closed.content, meta=closed.meta, explanation=closed.explanation)


def _as_record(version: Any) -> MemoryRecord:
    """A version as the record the sealer seals and opens (bound to the memory's id)."""
    return MemoryRecord(
        id=version.memory_id,
        tenant=version.tenant,
        project=version.project,
        content=version.content,
        sha256=version.sha256,
        occurred_at=version.created_at,
        created_at=version.created_at,
        updated_at=version.created_at,
        explanation=version.explanation,
        meta=version.meta,
    )


def _same_row(now: MemoryRecord, read: MemoryRecord) -> bool:
    """The stored row is still the one the sweep read (no write came between)."""
    return (now.updated_at, now.sha256, now.deleted_at, now.content) == (
        read.updated_at,
        read.sha256,
        read.deleted_at,
        read.content,
    )
