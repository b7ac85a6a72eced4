"""Pattern mining: recurring errors across a tenant's projects, and what fixed them.

Pure functions over plain records, so the clustering can be tested on a fixed corpus:

1. :func:`occurrences` keeps the failure and error memories (``meta.outcome_status ==
   "failure"`` or ``meta.type == "error"``) with their signature terms and vectors.
2. :func:`cluster` joins two occurrences when their texts mean nearly the same
   (cosine >= ``similar``) and do not name different errors (ECONNREFUSED is not ENOTFOUND,
   however alike the log lines around them), or when they share most of their signature terms (overlap >=
   ``overlap``), among them an error code, exception name or number (a shared identifier
   alone says where, not what), and are not unrelated in meaning (cosine >= ``floor``).
   Union-find, so the result does not depend on the order of the memories.
3. :func:`evidence` finds what followed each cluster in the same project, later, with a
   similar text: success memories (a fix), solutions applied (their outcome), and the
   solution a memory names in ``meta.solution_id``. Each piece of evidence has a key, so
   recording it again never counts twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from ..core.learning_records import ApplicationRecord
from ..core.records import MemoryRecord
from ..core.text import tokens
from . import tags
from .signature import common_terms, overlap, terms


@dataclass(frozen=True, slots=True)
class MiningOptions:
    similar: float = 0.80  # cosine that joins two occurrences on meaning alone
    overlap: float = 0.50  # share of signature terms that joins two occurrences...
    floor: float = 0.20  # ...unless their meanings are this far apart
    window_days: float = 30.0  # how long after a failure a fix still counts as following it
    max_memories: int = 2000  # the most recent failures scanned per tenant per run


@dataclass(slots=True)
class Occurrence:
    record: MemoryRecord
    terms: list[str]
    vector: np.ndarray | None
    strong: frozenset[str] = frozenset()  # the codes, exception names and numbers among the terms


@dataclass(slots=True)
class Cluster:
    members: list[Occurrence]
    terms: list[str]
    category: str
    centroid: np.ndarray | None
    tag: str = ""

    @property
    def ids(self) -> set[str]:
        return {m.record.id for m in self.members}


@dataclass(frozen=True, slots=True)
class Evidence:
    kind: str  # "memory" (a fix memory) or "solution"
    target_id: str
    success: bool
    key: str  # what proves it, e.g. "memory:<id>" or "application:<id>"


@dataclass(slots=True)
class Linked:
    cluster: Cluster
    evidence: list[Evidence] = field(default_factory=list)


def is_failure(record: MemoryRecord) -> bool:
    meta = record.meta or {}
    return meta.get("outcome_status") == "failure" or meta.get("type") == "error"


def is_success(record: MemoryRecord) -> bool:
    return (record.meta or {}).get("outcome_status") == "success"


def occurrences(records: Sequence[MemoryRecord], vectors: dict[str, np.ndarray], limit: int) -> list[Occurrence]:
    failures = sorted((r for r in records if is_failure(r)), key=lambda r: (r.occurred_at, r.id), reverse=True)
    return [
        Occurrence(r, terms(r.content), vectors.get(r.id), frozenset(terms(r.content, strong_only=True)))
        for r in failures[:limit]
    ]


def _cosines(items: Sequence[Occurrence]) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairwise cosines, and which items had a vector (a missing one has cosine 0)."""
    dim = next((o.vector.shape[0] for o in items if o.vector is not None), None)
    if dim is None:
        return None
    zero = np.zeros(dim, dtype=np.float32)
    matrix = np.stack([zero if o.vector is None else o.vector for o in items]).astype(np.float32)
    return matrix @ matrix.T, np.array([o.vector is not None for o in items])


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _pairs_sharing_terms(items: Sequence[Occurrence]) -> set[tuple[int, int]]:
    """Pairs that share a strong term, or (when neither has one) an identifier."""
    by_term: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        for term in item.strong or item.terms:
            by_term.setdefault(term, []).append(index)
    pairs: set[tuple[int, int]] = set()
    for indices in by_term.values():
        for a_pos, a in enumerate(indices):
            for b in indices[a_pos + 1 :]:
                pairs.add((a, b))
    return pairs


def _codes(item: Occurrence) -> set[str]:
    return {t for t in item.strong if not t.isdigit()}


def _different_errors(a: Occurrence, b: Occurrence) -> bool:
    """Both name their error (a code or exception name) and the names differ: similar wording
    (the same module, the same log line around it) does not make them one error."""
    left, right = _codes(a), _codes(b)
    return bool(left and right and not left & right)


def cluster(items: Sequence[Occurrence], options: MiningOptions = MiningOptions()) -> list[list[int]]:
    """Groups of indices into ``items``, largest first; singletons included."""
    n = len(items)
    parent = list(range(n))
    cosines = _cosines(items)

    def join(a: int, b: int) -> None:
        parent[_find(parent, a)] = _find(parent, b)

    def meaning(a: int, b: int) -> float:  # unknown meaning does not keep terms apart
        if cosines is None or not (cosines[1][a] and cosines[1][b]):
            return 1.0
        return float(cosines[0][a, b])

    if cosines is not None:
        for a, b in zip(*np.nonzero(np.triu(cosines[0] >= options.similar, k=1))):
            if not _different_errors(items[a], items[b]):
                join(int(a), int(b))
    for a, b in _pairs_sharing_terms(items):
        if meaning(a, b) >= options.floor and overlap(items[a].terms, items[b].terms) >= options.overlap:
            join(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(_find(parent, i), []).append(i)
    return sorted(groups.values(), key=lambda g: (-len(g), min(g)))


def describe_cluster(members: list[Occurrence]) -> Cluster:
    """The cluster's shared terms, majority category and normalised centroid."""
    shared = common_terms([m.terms for m in members], limit=8)
    if not shared:  # joined on meaning alone: fall back to the words they share
        shared = common_terms([tokens(m.record.content) for m in members], limit=3)
    categories = Counter((m.record.meta or {}).get("category") or "general" for m in members)
    category = sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    vectors = [m.vector for m in members if m.vector is not None]
    centroid = None
    if vectors:
        mean = np.mean(np.stack(vectors), axis=0)
        norm = float(np.linalg.norm(mean))
        centroid = (mean / norm).astype(np.float32) if norm > 0 else None
    members = sorted(members, key=lambda m: (m.record.occurred_at, m.record.id), reverse=True)
    return Cluster(members=members, terms=shared, category=category, centroid=centroid)


def name(found: Cluster, existing: dict[str, set[str]], taken: AbstractSet[str] = frozenset()) -> str:
    """Keep the tag of an existing pattern of this category that holds the same memories;
    otherwise a readable tag from the cluster's salient terms (:func:`tags.readable_tag`), so a
    re-run names the same cluster the same way. A pattern made by a link, with no occurrences
    yet, is taken over by a cluster of its tag; any other holder of the tag gets it a suffix."""
    best, best_shared = None, 0
    for tag, examples in sorted(existing.items()):
        shared = len(examples & found.ids)
        if shared > best_shared:
            best, best_shared = tag, shared
    if best:
        return best
    base = tags.readable_tag([m.record.content for m in found.members], found.terms)
    if base in existing and not existing[base] and base not in taken:
        return base
    return tags.free_tag(base, set(existing) | set(taken))


def _related(found: Cluster, text: str | None, vector: np.ndarray | None, floor: float) -> bool:
    if text is None:
        return True
    if found.terms and set(terms(text)) & set(found.terms):
        return True
    return vector is not None and found.centroid is not None and float(vector @ found.centroid) >= floor


def _first_failures(found: Cluster) -> dict[str, datetime]:
    first: dict[str, datetime] = {}
    for m in found.members:
        r = m.record
        if r.project not in first or r.occurred_at < first[r.project]:
            first[r.project] = r.occurred_at
    return first


def _named_solution(record: MemoryRecord) -> str | None:
    solution_id = (record.meta or {}).get("solution_id")
    return solution_id if isinstance(solution_id, str) and solution_id else None


def evidence(
    found: Cluster,
    successes: Sequence[MemoryRecord],
    applications: Sequence[ApplicationRecord],
    vectors: dict[str, np.ndarray],
    options: MiningOptions = MiningOptions(),
) -> list[Evidence]:
    """What followed the cluster's failures in the same project, within the window."""
    return [*success_evidence(found, successes, vectors, options), *own_evidence(found, applications, options)]


def following(found: Cluster, options: MiningOptions = MiningOptions()):
    """``follows(project, at)``: whether a moment in a project falls in the window after one of
    the cluster's failures there (what :func:`success_evidence` asks first, needing no vector)."""
    first_failure = _first_failures(found)
    window = timedelta(days=options.window_days)

    def follows(project: str | None, at: datetime) -> bool:
        start = first_failure.get(project or "")
        return start is not None and start < at <= start + window

    return follows


def success_evidence(
    found: Cluster,
    successes: Sequence[MemoryRecord],
    vectors: dict[str, np.ndarray],
    options: MiningOptions = MiningOptions(),
) -> list[Evidence]:
    """The fix memories that followed the cluster (and the solutions they name); successes may
    come a page at a time (capsule.learning.mining_pages)."""
    follows = following(found, options)
    out: list[Evidence] = []
    for memory in successes:  # a fix memory, and the solution it names
        if follows(memory.project, memory.occurred_at) and _related(
            found, memory.content, vectors.get(memory.id), options.floor
        ):
            out.append(Evidence("memory", memory.id, True, f"memory:{memory.id}"))
            if solution := _named_solution(memory):
                out.append(Evidence("solution", solution, True, f"memory:{memory.id}"))
    return out


def own_evidence(
    found: Cluster, applications: Sequence[ApplicationRecord], options: MiningOptions = MiningOptions()
) -> list[Evidence]:
    """The solutions the cluster's failures name (they did not help), and the applications of
    solutions that followed it."""
    follows = following(found, options)
    out: list[Evidence] = []
    for m in found.members:  # a failure that names the solution that did not help
        if solution := _named_solution(m.record):
            out.append(Evidence("solution", solution, False, f"memory:{m.record.id}"))
    for a in applications:
        if follows(a.project, a.at) and _related(found, a.error, None, options.floor):
            out.append(Evidence("solution", a.solution_id, a.success, f"application:{a.id}"))
    return out
