"""The Vector Bridge's memory metadata, kept as sent and read onto ours.

The Vector Bridge stored any JSON object as a chunk's ``meta``. Ours is typed where we interpret
it (``outcome_status`` is success|failure|unknown, ``tags`` a list of strings, ``type`` a string,
keys a document store can hold), so a hook's ``{"outcome_status": "none", "tags": "auth"}`` would
be refused by our own API. :func:`meta_request` keeps every key whose value fits our rules as it
is, puts our reading in place of one that does not (``tags: "auth"`` -> ``["auth"]``; an outcome
spelling -> success/failure/unknown, which ranking reads) and keeps what was sent under
:data:`KEPT_KEY` as JSON text; :func:`meta_as_sent` gives the object back exactly as it was sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from ..core.errors import InvalidInput
from ..core.models import MemoryMeta

# JSON text of {"sent": {key: value as sent}, "added": [keys we set that were not sent]}: a string,
# so keys no document store takes ("$x", "a.b") are kept too.
KEPT_KEY = "vector_bridge"

# The spellings of an outcome seen in the Vector Bridge's hooks and digests (COMPAT §2.6), and the
# obvious others. The original penalised only the exact word "failure"; "failed" is a failure too.
OUTCOMES = {
    "success": "success",
    "succeeded": "success",
    "successful": "success",
    "passed": "success",
    "pass": "success",
    "ok": "success",
    "done": "success",
    "fixed": "success",
    "resolved": "success",
    "failure": "failure",
    "failed": "failure",
    "fail": "failure",
    "error": "failure",
    "broken": "failure",
    "blocked": "failure",
}


def outcome_of(meta: Mapping[str, Any]) -> str:
    """success, failure or unknown: ``outcome_status``, else (missing or empty) ``outcome``, as the
    original's ranking bonus read them; any case, surrounding spaces ignored."""
    value = meta.get("outcome_status") or meta.get("outcome")
    if not isinstance(value, str):
        return "unknown"
    return OUTCOMES.get(value.strip().lower(), "unknown")


def meta_request(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """A meta our API takes for ``raw`` (any JSON object), losing nothing; see the module doc.
    Raises InvalidInput (field ``meta``) only where ours has a limit the original had not: size."""
    raw = dict(raw or {})
    fits: dict[str, Any] = {}
    sent: dict[str, Any] = {}
    for key, value in raw.items():
        (fits if _fits(key, value) else sent)[key] = value
    if "tags" in sent:
        tags = _tags(sent["tags"])
        if tags:
            fits["tags"] = tags
    outcome = outcome_of(raw)
    if raw.get("outcome_status") != outcome:
        if "outcome_status" in raw:
            sent["outcome_status"] = raw["outcome_status"]
        fits["outcome_status"] = outcome
    try:
        typed = MemoryMeta.model_validate(fits).plain()
    except ValidationError as exc:  # a key that fits alone can still break the whole (its size)
        raise InvalidInput(f"meta: {exc.errors(include_url=False)[0]['msg']}", field="meta") from None
    added = sorted(key for key in typed if key not in raw)
    if sent or added:
        typed[KEPT_KEY] = json.dumps({"sent": sent, "added": added}, ensure_ascii=False, separators=(",", ":"))
        try:
            typed = MemoryMeta.model_validate(typed).plain()
        except ValidationError as exc:
            raise InvalidInput(f"meta: {exc.errors(include_url=False)[0]['msg']}", field="meta") from None
    return typed


def meta_as_sent(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The meta object a Vector Bridge caller sent, from what :func:`meta_request` stored. A meta
    stored through our own API (no kept part) comes back as stored."""
    out = dict(stored)
    kept = out.pop(KEPT_KEY, None)
    if not isinstance(kept, str):
        return out
    try:
        record = json.loads(kept)
        sent, added = record["sent"], record["added"]
    except (ValueError, KeyError, TypeError):
        out[KEPT_KEY] = kept  # not ours: a caller's own key of that name
        return out
    for key in added:
        out.pop(key, None)
    out.update(sent)
    return out


def _fits(key: Any, value: Any) -> bool:
    if value is None:
        return False  # ours stores no nulls (a typed field takes none); the original kept them
    if key == KEPT_KEY:
        return False
    try:
        MemoryMeta.model_validate({key: value})
    except (ValidationError, ValueError, TypeError):
        return False
    return True


def _tags(value: Any) -> list[str]:
    """Our reading of a ``tags`` value that is not a list of tags: a string is one tag."""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    tags = [item.strip() for item in items if isinstance(item, str) and item.strip()]
    try:
        return MemoryMeta.model_validate({"tags": list(dict.fromkeys(tags))}).tags
    except ValidationError:
        return []


__all__ = ["KEPT_KEY", "OUTCOMES", "outcome_of", "meta_request", "meta_as_sent"]
