"""The scheduled jobs: retention, pattern mining, embedding backfill and the secrets sweep
(``redact``: memories stored before the current secret rules, redacted with their history,
:mod:`capsule.jobs.guard_sweep`).

Each job is idempotent (running it twice does what running it once did), bounded per run
(it stops after a budget and says so), resumable (the next run continues where the last
stopped: mining saves the last tenant it finished, the others pick up their work from the
data itself; mining also keeps a mark of what each tenant's last mining read, and reads a
tenant again only when it changed) and safe when two runs overlap: a run first takes a lease
row/document with an expiry, and a second run finding it held reports that and does nothing.
Should a lease expire under a slow run, the jobs are still safe to overlap: forgetting,
purging and embedding are idempotent, and mining counts each piece of evidence once.

The same :meth:`Jobs.run` serves the Lambda handlers, ``capsule jobs run NAME`` and the
scheduler inside ``capsule serve``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from ..config import Settings
from ..core import deadline, limits
from ..core.clock import Clock, system_clock
from ..core.errors import InvalidInput, Unavailable
from ..core.retention import over_limit
from ..embedders.base import Embedder
from ..learning.service import LearningService
from ..service.context import text_to_embed
from ..store.base import MemoryStore
from ..store.learning import LearningStore
from ..store.sides import governance_store

JOB_NAMES = ("retention", "mining", "backfill", "redact")
PENDING_COUNTED = 1000  # how far a report counts what is still pending
LEASE_SECONDS = 15 * 60
MINING_MARKS = "mining-marks"  # job state: each tenant's mark as its last mining read it
BATCH_RESERVE_S = 20.0  # a backfill batch (embed, then one write per memory) is not started with less left


class JobReport(BaseModel):
    job: str
    ran: bool = Field(description="False when another run held the lease.")
    complete: bool = Field(description="False when the run stopped at its budget; the next run continues.")
    counts: dict[str, int] = Field(default_factory=dict)
    started_at: datetime
    finished_at: datetime
    explanation: str


class Jobs:
    def __init__(
        self,
        memories: MemoryStore,
        learning: LearningService,
        embedder: Embedder,
        *,
        clock: Clock = system_clock,
        settings: Settings | None = None,
        lease_seconds: float = LEASE_SECONDS,
        holder: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self.memories = memories
        self.learning = learning
        self.store: LearningStore = learning.store
        self.embedder = embedder
        self.clock = clock
        self.settings = settings or Settings()
        self.lease_seconds = lease_seconds
        self._holder = holder

    def run(self, name: str, **budget: int) -> JobReport:
        """Run one job under its lease; ``budget`` overrides the job's per-run limits."""
        if name not in JOB_NAMES:
            raise InvalidInput(f"no job '{name}'; the jobs are {', '.join(JOB_NAMES)}", field="name")
        started, holder = self.clock(), self._holder()
        lease = f"job:{name}"
        if not self.store.acquire_lease(
            lease, holder, now=started, until=started + timedelta(seconds=self.lease_seconds)
        ):
            return JobReport(
                job=name,
                ran=False,
                complete=False,
                started_at=started,
                finished_at=self.clock(),
                explanation=f"Skipped: another {name} run holds the lease; it will finish the work.",
            )
        try:
            complete, counts, text = getattr(self, f"_{name}")(**budget)
        finally:
            self.store.release_lease(lease, holder)
        return JobReport(
            job=name,
            ran=True,
            complete=complete,
            counts=counts,
            started_at=started,
            finished_at=self.clock(),
            explanation=text,
        )

    # ---- retention -----------------------------------------------------------

    def _retention(
        self, max_evictions: int = 1000, max_expiries: int = 1000, max_reseals: int = 1000
    ) -> tuple[bool, dict[str, int], str]:
        now = self.clock()
        # Ephemeral memories past their expiry go first, for good and audited (capsule.governance).
        lapsed = len(governance_store(self.memories).expire(at=now, limit=max_expiries))
        purged = self.memories.purge_forgotten(before=now - timedelta(days=limits.FORGET_RECOVERABLE_DAYS), at=now)
        expired = self.memories.cache_purge(before=now - timedelta(days=limits.EMBEDDING_CACHE_DAYS))
        # The rolling limit is kept by the writes, each naming what it evicts in its answer, and
        # by a lowered limit's own answer: this job evicts nothing by it (nothing is evicted that
        # no answer announced, capsule.core.retention); it only counts projects over it.
        evicted, complete = 0, True
        over_projects = sum(
            over_limit(s.memories, s.retention_limit, self.settings.retention_limit)
            for tenant in self.memories.tenants()
            for s in self.memories.projects(tenant)
        )
        counts = {
            "purged": purged,
            "cache_expired": expired,
            "evicted": evicted,
            "projects_over_limit": over_projects,
            "ephemeral_expired": lapsed,
        }
        if hasattr(self.memories, "sealer"):  # encryption at rest: re-seal under the current keys (capsule.crypto)
            from ..sealing.reseal import sweep

            counts["resealed"] = sweep(self.memories, limit=max_reseals)
        complete = complete and lapsed < max_expiries
        text = (
            f"Purged {lapsed} ephemeral memories past their expiry, purged {purged} memories forgotten more than {limits.FORGET_RECOVERABLE_DAYS} days ago, expired "
            f"{expired} embedding-cache entries older than {limits.EMBEDDING_CACHE_DAYS} days, and evicted "
            f"{evicted} memories by the rolling limit (only a write, naming them in its answer, evicts by it);"
            f" {over_projects} project(s) hold more than their limit (restored or pinned memories)."
        )
        if not complete:
            text += f" Stopped at the budget of {max_expiries} expiries; the next run continues."
        return complete, counts, text

    # ---- mining --------------------------------------------------------------

    def _mining(self, max_tenants: int = 50) -> tuple[bool, dict[str, int], str]:
        state = self.store.job_state("mining")
        after = state.get("after")
        # What each tenant's last mining read (MINING_MARKS): a tenant unchanged since is not read
        # again, so a run costs what changed, not the tenants' size (issue 32: 9 s at 100k).
        marks = self.store.job_state(MINING_MARKS)
        every = self.memories.tenants()
        tenants = [t for t in every if after is None or t > after]
        batch = tenants[:max_tenants]
        counts = {"tenants": 0, "scanned": 0, "clusters": 0, "linked": 0, "unchanged": 0}
        for tenant in batch:
            mark = self._mining_mark(tenant)  # read before the mine: a write meanwhile is seen next run
            if marks.get(tenant) == mark:
                counts["unchanged"] += 1
            else:
                result = self.learning.mine(tenant)
                counts["tenants"] += 1
                counts["scanned"] += result.scanned
                counts["clusters"] += result.clusters
                counts["linked"] += result.linked
                marks[tenant] = mark
            self.store.save_job_state("mining", {"after": tenant}, at=self.clock())
        kept = set(every)  # a tenant gone (merged, emptied) leaves no mark behind
        self.store.save_job_state(MINING_MARKS, {t: m for t, m in marks.items() if t in kept}, at=self.clock())
        complete = len(tenants) <= max_tenants
        if complete:
            self.store.save_job_state("mining", {}, at=self.clock())
        text = (
            f"Mined {counts['tenants']} tenant(s): scanned {counts['scanned']} failure/error memories, "
            f"{counts['clusters']} recurring cluster(s), {counts['linked']} new piece(s) of fix evidence."
        )
        if counts["unchanged"]:
            text += f" {counts['unchanged']} tenant(s) unchanged since their last mining were not read again."
        if not complete:
            text += f" {len(tenants) - len(batch)} tenant(s) remain for the next run."
        return complete, counts, text

    def _mining_mark(self, tenant: str) -> str:
        """What a tenant's mining depends on, in a few reads: every project's version (a write
        of a memory bumps it: the search index trusts the same), the newest solution
        application, the options and the embedding model. Equal marks find equal patterns."""
        latest = self.store.applications(tenant, limit=1)
        what = [
            sorted(self.memories.change_markers(tenant, None).items()),
            [latest[0].id, latest[0].at.isoformat()] if latest else None,
            repr(self.learning.mining_options),
            self.embedder.model_id,
        ]
        return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:32]

    # ---- backfill ------------------------------------------------------------

    def _backfill(self, batch: int = 64, max_batches: int = 20) -> tuple[bool, dict[str, int], str]:
        embedded, left, error = self._backfill_memories(batch, max_batches)
        solutions = 0
        if error is None:
            try:
                solutions = self._backfill_solutions(batch * max_batches)
            except Unavailable as exc:
                error = exc.message
        counts = {"embedded": embedded, "pending": left, "solutions": solutions}
        text = f"Embedded {embedded} memories stored while the embedder was unavailable or under another model"
        text += f" and the signatures of {solutions} solution(s)" if solutions else ""
        if error is not None:
            return (
                False,
                counts,
                (
                    f"{text}, then the embedder was unavailable ({error}); {left} memories remain "
                    "pending, found by keyword until the next run embeds them."
                ),
            )
        if left:
            return False, counts, f"{text}; {left} remain for the next run (budget {batch * max_batches} per run)."
        return True, counts, f"{text}; none remain."

    def _backfill_memories(self, batch: int, max_batches: int) -> tuple[int, int, str | None]:
        """(embedded, still pending, the embedder's error if it failed)."""
        embedded = 0
        for _ in range(max_batches):
            left = deadline.remaining()
            if left is not None and left < BATCH_RESERVE_S:  # stop while there is time to report
                break
            pending = self.memories.pending_embeddings(limit=batch, model=self.embedder.model_id)
            if not pending:
                return embedded, 0, None
            try:
                words = self.settings.session_context_words
                vectors = self.embedder.embed([text_to_embed(self.memories, r, max_words=words) for r in pending])
            except Unavailable as exc:
                return embedded, self._pending(), exc.message
            for record, vector in zip(pending, vectors):
                self.memories.set_embedding(record.tenant, record.id, vector, self.embedder.model_id)
            embedded += len(pending)
        return embedded, self._pending(), None

    # ---- redact ----------------------------------------------------------------

    def _redact(self, max_memories: int = 5000, page: int = 200) -> tuple[bool, dict[str, int], str]:
        """Sweep stored memories (and their old versions) by the current secret rules; resumes
        where the last run stopped, and does nothing once a sweep under these rules finished."""
        from ..guard.policy import Policies
        from ..guard.stored import store_policies
        from .guard_sweep import Sweep

        policies = store_policies(
            self.memories, Policies(secrets=self.settings.secrets_policy, pii=self.settings.pii_policy)
        )
        sweep = Sweep(
            self.memories,
            self.embedder,
            policies=policies,
            clock=self.clock,
            session_words=self.settings.session_context_words,
        )
        report = sweep.run(self.store.job_state("redact"), max_memories=max_memories, page=page)
        self.store.save_job_state("redact", report.state, at=self.clock())
        return report.complete, report.counts, report.explanation

    def _pending(self) -> int:
        return len(self.memories.pending_embeddings(limit=PENDING_COUNTED, model=self.embedder.model_id))

    def _backfill_solutions(self, budget: int) -> int:
        """Embed solution signatures missing under the current model (it was down, or changed)."""
        done = 0
        for tenant in self.store.tenants():
            if done >= budget:
                break
            records = self.store.solutions(tenant, category=None, limit=budget)
            done += self.learning.embed_solutions(records, limit=budget - done)
        return done
