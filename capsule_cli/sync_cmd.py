"""``capsule sync pull|push|both --url URL [--project P]...``: one memory across the local
store and a remote ``capsule serve`` or hosted tenant (see :mod:`capsule.sync`).

Remote calls go through :class:`mcp_client.client.CapsuleClient` (its retries and signing);
the per-peer watermarks live in ``<data dir>/sync/``. Conflicts are resolved by the rule of
:mod:`capsule.sync.merge` and listed. A failing remote stops the sync with its error; the
next run resumes after the last batch the remote confirmed.

Always embedded, a running ``capsule serve`` of the same data folder or not (issue 30): moving
the local side through that server's ``/v1/sync/changes`` and ``/v1/sync/apply`` would still
not make the command library-free or fast, because the remote side loads the library itself:
:class:`mcp_client.client.CapsuleClient` imports pydantic and the API's models, and the pages it
reads are checked with :mod:`capsule.sync.models`, which bring the export format (numpy).
Measured: those imports alone take 0.85-0.92 s of CPU, an embedded sync 1.06 s in all, so the
warm route would save about a tenth of the command and add a second path to keep equal. The
local side's writes go through the library on the same SQLite file the server uses, as every
embedded command's do.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from capsule.core.embedder_names import EMBEDDER_NAMES
from capsule.core.errors import CapsuleError
from mcp_client.auth_methods import METHODS

from . import cli, render
from .progress import Progress

if TYPE_CHECKING:  # the library and the HTTP client load when a sync runs: `capsule sync --help` needs neither
    from capsule.sync import models as sm
    from mcp_client.client import CapsuleClient


class HttpPeer:
    """The remote side of a sync, over the API."""

    def __init__(self, client: CapsuleClient) -> None:
        self.client, self.name = client, client.base_url

    def changes(self, project: str, after: list[int] | None, limit: int) -> sm.ChangesPage:
        from capsule.sync import models as sm

        query = {"project": project, "limit": limit, "after": None if after is None else f"{after[0]}.{after[1]}"}
        return sm.ChangesPage.model_validate(self.client.request("GET", "/v1/sync/changes", query=query))

    def apply(self, request: dict[str, Any]) -> sm.ApplyResult:
        from capsule.sync import models as sm

        # Idempotent: a batch merged twice writes nothing the second time, so a retry is safe.
        return sm.ApplyResult.model_validate(self.client.request("POST", "/v1/sync/apply", body=request, keyed=True))

    def projects(self) -> list[str]:
        return [p.project for p in self.client.projects().projects]


def remote_peer(args: argparse.Namespace) -> HttpPeer:
    from mcp_client.backends import Connection, check_url, make_auth
    from mcp_client.client import CapsuleClient, Retry

    conn = Connection(
        url=check_url(args.url),
        auth=None if args.auth in (None, "auto") else args.auth,
        region=args.region,
        profile=args.profile,
        api_key_file=args.api_key_file,
        data_dir=args.data_dir,
    )
    return HttpPeer(CapsuleClient(conn.url, auth=make_auth(conn), timeout_s=args.timeout, retry=Retry(attempts=4)))  # type: ignore[arg-type]


def _text(report) -> str:
    lines = [report.explanation()]
    for move in report.moves:
        for c in move.conflicts:
            won = ", ".join(f"{name}: {side}" for name, side in sorted(c["fields"].items()))
            lines.append(f"  conflict {c['direction']} {c['project']} {c['id']}: {won} ({c['rule']})")
    return "\n".join(lines)


def cmd_sync(args: argparse.Namespace) -> None:
    from capsule.sync import LocalPeer, Watermarks, run_sync, state_path

    service = cli.service_from(args)
    remote = remote_peer(args)
    marks = Watermarks(state_path(service.settings.data_dir / "sync", remote.name, cli.LOCAL_TENANT), remote.name)
    with Progress(f"sync {args.direction}") as progress:
        try:
            report = run_sync(
                LocalPeer(service, cli.LOCAL_TENANT),
                remote,
                args.project,
                args.direction,
                marks,
                progress=progress.advance,
            )
        except CapsuleError as exc:
            raise CapsuleError(
                f"sync stopped: {exc.message}; what the remote confirmed is kept, and the next run resumes from there"
            ) from exc
    summary = {"moves": [m.__dict__ for m in report.moves], "explanation": report.explanation()}
    print(render.as_json(summary) if args.json else _text(report))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sync", help="sync the local store with a remote capsule serve or hosted tenant")
    p.add_argument("direction", choices=["pull", "push", "both"])
    p.add_argument("--url", required=True, help="the remote API's base URL")
    p.add_argument(
        "--project", "-p", action="append", help="a project to sync (repeatable; default: every project of either side)"
    )
    p.add_argument("--auth", choices=list(METHODS), help="how to sign (default: auto, as capsule mcp)")
    p.add_argument("--region")
    p.add_argument("--profile")
    p.add_argument("--api-key-file", help="file holding the API key (default: CAPSULE_API_KEY)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--data-dir", help="data folder (default ~/.capsule, or CAPSULE_DATA_DIR)")
    p.add_argument("--embedder", choices=EMBEDDER_NAMES)
    p.set_defaults(run=cmd_sync)
