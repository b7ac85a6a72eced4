"""The guard over rows that were written somewhere else, or before the current rules: an import's
and a sync's memories, old versions, votes and audit records, and the redact job's sweep.

These rows carry what the place they came from computed: a content sha256 and a vector. The rule
is the one a store follows (:mod:`capsule.guard.apply`), with what that implies for derived data:

* a row changes only where the project's policies *redact* something the row still holds; a row
  with nothing to redact is kept exactly as it came (lossless), its own ``meta._guard`` included;
* a redacted row's ``meta._guard`` is made anew (the placeholders an earlier redaction left are
  kept as redacted findings, as an ingest chunk's are: :func:`capsule.guard.policy.rescan`);
* when the content changes its sha256 is computed again (by the rule the row's key followed) and
  the carried vector is dropped: the memory is ``pending_embedding``, embedded by whoever wrote it
  or by the backfill job, never from the text that held the secret;
* a sealed row (capsule.crypto) is kept as it is: it cannot be read here, and it was sealed
  because its writer's guard flagged it.

Under ``refuse`` an import or a sync refuses the row (raises :class:`~capsule.core.errors.InvalidInput`
naming the field); the redact job cannot refuse what is already stored, so it redacts
(:func:`for_sweep`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..core.records import AuditRecord, MemoryRecord
from ..core.text import sha256
from .apply import GuardedWrite
from .policy import GUARD_KEY, Guarded, Policies, guard_text, with_placeholders
from .tree import TreeReport, guard_tree

PolicyOf = Callable[[str, str], Policies]  # (tenant, project) -> the project's policies


def for_sweep(policies: Policies) -> Policies:
    """The policies a sweep over stored rows applies: ``refuse`` acts as ``redact``."""
    return Policies(
        secrets="redact" if policies.secrets == "refuse" else policies.secrets,
        pii="redact" if policies.pii == "refuse" else policies.pii,
    )


def store_policies(store: Any, default: Policies | None = None) -> PolicyOf:
    """A project's policies read from ``store`` (its own settings), ``default``'s where unset
    (the deployment's; :class:`Policies`' defaults when not given)."""
    base = default or Policies()

    def of(tenant: str, project: str) -> Policies:
        own = store.guard_policies(tenant, project)
        return Policies(secrets=own.get("secrets_policy") or base.secrets, pii=own.get("pii_policy") or base.pii)

    return of


def _sealed(text: str | None) -> bool:
    if not text or not text.startswith("cme1."):  # capsule.crypto.envelope.PREFIX (checked below)
        return False
    from ..crypto import envelope

    return envelope.is_sealed(text)


def _rescan(text: str, policies: Policies, field: str) -> tuple[Guarded, set[str]]:
    """``text`` guarded, with earlier placeholders as redacted findings; and the kinds redacted now."""
    guarded = guard_text(text, policies, field=field)
    now = {f["kind"] for fs in guarded.report.values() for f in fs if f["action"] == "redacted"}
    return with_placeholders(guarded), now


class Cleaned:
    """What the guard made of one row's texts: the new texts and meta, and what it redacted where
    (``where``: field -> kinds, for the report and the audit; never the values)."""

    def __init__(self, content: str, explanation: str | None, meta: dict[str, Any], where: dict[str, set[str]]):
        self.content, self.explanation, self.meta, self.where = content, explanation, meta, where

    @property
    def changed(self) -> bool:
        return bool(self.where)

    @property
    def kinds(self) -> set[str]:
        return set().union(*self.where.values()) if self.where else set()


def clean_texts(
    content: str, explanation: str | None, meta: dict[str, Any], policies: Policies, *, field: str = ""
) -> Cleaned:
    """Guard a stored row's content, explanation and meta (raises under ``refuse``)."""
    prefix = f"{field}." if field else ""
    own = {k: v for k, v in meta.items() if k != GUARD_KEY}
    body, body_now = _rescan(content, policies, f"{prefix}content")
    note = None if explanation is None else _rescan(explanation, policies, f"{prefix}explanation")
    found = TreeReport()
    guarded_meta = guard_tree(own, policies, found, where=f"{prefix}meta")
    where = {
        name: kinds
        for name, kinds in (
            ("content", body_now),
            ("explanation", note[1] if note else set()),
            ("meta", set(found.redacted)),
        )
        if kinds
    }
    if not where:
        return Cleaned(content, explanation, meta, {})
    earlier = (meta.get(GUARD_KEY) or {}).get("meta") or {}
    found.redacted |= set(earlier.get("redacted") or ())
    write = GuardedWrite(
        texts=[body.text],
        explanation=None if note is None else note[0].text,
        guards=[body],
        explanation_guard=None if note is None else note[0],
        meta=guarded_meta,
        meta_found=found,
    )
    return Cleaned(body.text, write.explanation, write.meta_for(0), where)


def content_key(record: MemoryRecord, content: str) -> str:
    """The sha256 a record takes for new content, by the rule its key followed (as an update's,
    capsule.service.history): the content's hash, or an import's (content, occurred-at) key."""
    if record.sha256 == sha256(record.content):
        return sha256(content)
    return sha256(f"{content}\x00{record.occurred_at.isoformat()}")


def _also(cleaned: Cleaned, name: str, text: str | None, policies: Policies, field: str) -> str | None:
    """Another free text of the row (why it was forgotten, why a version was replaced), guarded."""
    out, kinds = clean_text(text, policies, field=f"{field}.{name}" if field else name)
    if kinds:
        cleaned.where[name] = kinds
    return out


def clean_memory(record: MemoryRecord, policies: Policies, *, field: str = "") -> tuple[MemoryRecord, Cleaned]:
    """The record to write, and what was redacted (``record`` itself when nothing was)."""
    if _sealed(record.content):
        return record, Cleaned(record.content, record.explanation, record.meta, {})
    cleaned = clean_texts(record.content, record.explanation, record.meta, policies, field=field)
    reason = _also(cleaned, "deleted_reason", record.deleted_reason, policies, field)
    if not cleaned.changed:
        return record, cleaned
    out = replace(
        record, content=cleaned.content, explanation=cleaned.explanation, meta=cleaned.meta, deleted_reason=reason
    )
    if cleaned.content != record.content:
        out.sha256 = content_key(record, cleaned.content)
        out.embedding, out.model, out.status = None, None, "pending_embedding"
    return out, cleaned


def clean_version(version: Any, policies: Policies, *, field: str = "") -> tuple[Any, Cleaned]:
    """An old version (:class:`~capsule.store.governance.VersionRecord`) with its texts guarded."""
    if _sealed(version.content):
        return version, Cleaned(version.content, version.explanation, version.meta, {})
    cleaned = clean_texts(version.content, version.explanation, version.meta, policies, field=field)
    reason = _also(cleaned, "reason", version.reason, policies, field)
    if not cleaned.changed:
        return version, cleaned
    out = replace(version, content=cleaned.content, explanation=cleaned.explanation, meta=cleaned.meta, reason=reason)
    if cleaned.content != version.content:
        out.sha256 = sha256(cleaned.content)  # a version's hash is of its content (history shows it so)
    return out, cleaned


def clean_text(text: str | None, policies: Policies, *, field: str) -> tuple[str | None, set[str]]:
    """One free text (a vote's context, an audit reason): the text to keep and the kinds redacted."""
    if not text or _sealed(text):
        return text, set()
    guarded = guard_text(text, policies, field=field)
    return guarded.text, {f["kind"] for fs in guarded.report.values() for f in fs if f["action"] == "redacted"}


def clean_audit(record: AuditRecord, policies: Policies, *, field: str = "reason") -> tuple[AuditRecord, set[str]]:
    reason, kinds = clean_text(record.reason, policies, field=field)
    return (replace(record, reason=reason) if kinds else record), kinds  # type: ignore[arg-type]  # kinds: a text


def where_said(where: dict[str, set[str]]) -> str:
    """``content: aws-access-key; meta: generic-secret`` (kinds and fields only)."""
    return "; ".join(f"{name}: {', '.join(sorted(kinds))}" for name, kinds in sorted(where.items()))
