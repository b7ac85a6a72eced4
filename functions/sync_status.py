"""``GET /v1/sync/status``: what ``capsule sync`` left in this gateway's data folder, for the console.

``capsule sync`` keeps its watermarks on the client side, under ``<data dir>/sync/`` (one file per
remote, :mod:`capsule.sync.state`); ``capsule serve`` runs on the same machine with the same data
folder, so the gateway answers this itself, beside the route table, as it does ``/v1/keys``: there
is nothing to read in a hosted deployment, so no Lambda. Read-only, and only with the gateway's own
token (a named key gets 403, as for ``/v1/keys``).

Each target is a remote ``capsule sync`` has run against, with each project's last push and pull
watermarks (``{"version", "seq"}``, ``seq`` null meaning every row of that version) and when each
last finished. A remote's address is shown without what could be a secret: a ``user:password@`` is
replaced by ``***@`` and a query string or fragment by ``?***``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from capsule.core.errors import Forbidden

from .auth import HttpRequest
from .keys_api import TOKEN_NAME

PATH = "/v1/sync/status"
METHODS = ["GET"]
HIDDEN = "***"


def owns(path: str) -> bool:
    return path == PATH


def redact(url: str) -> str:
    """``url`` without credentials: the user and password, the query and the fragment become ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return HIDDEN
    netloc = parts.netloc
    if "@" in netloc:
        netloc = HIDDEN + "@" + netloc.rpartition("@")[2]
    query = HIDDEN if parts.query or parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _mark(value: Any) -> dict[str, int | None] | None:
    from capsule.sync.state import SEEN_ALL

    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        return None
    return {"version": value[0], "seq": None if value[1] >= SEEN_ALL else value[1]}


def _target(saved: dict[str, Any]) -> dict[str, Any]:
    projects = [
        {
            "project": name,
            "push": _mark(marks.get("push")),
            "pushed_at": marks.get("push_at"),
            "pull": _mark(marks.get("pull")),
            "pulled_at": marks.get("pull_at"),
        }
        for name, marks in sorted(saved["projects"].items())
    ]
    return {"target": redact(saved["peer"]), "saved_at": saved["saved_at"], "projects": projects}


def status(data_dir: Path) -> dict[str, Any]:
    """The payload: every target's watermarks, read from ``data_dir/sync``."""
    from capsule.sync.state import saved_states

    folder = data_dir / "sync"
    targets = [_target(s) for s in saved_states(folder)]
    if not targets:
        explanation = (
            "No sync target configured: capsule sync has not run with this data folder "
            "(capsule sync push|pull|both --url URL)."
        )
    else:
        explanation = (
            f"{len(targets)} sync target(s) capsule sync has run against with this data folder, with each "
            "project's last push and pull watermarks; run capsule sync to move what changed since."
        )
    return {"targets": targets, "explanation": explanation}


def handle(request: HttpRequest, data_dir: Path, authorize: Callable[[], dict[str, Any]]) -> tuple[int, Any]:
    """(status, payload) for ``GET /v1/sync/status``; raises CapsuleError for a refusal."""
    caller = (authorize().get("lambda") or {}).get("key")
    if caller != TOKEN_NAME:
        raise Forbidden("the sync status is read with the gateway's own token (capsule keys token), not a named key")
    return 200, status(data_dir)
