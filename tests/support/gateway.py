"""A local gateway for the routes it answers itself (keys, sync status, the console's files): any
Lambda handler it reaches is a failure."""

from __future__ import annotations

from pathlib import Path

from functions.credentials import Credentials
from functions.gateway import Gateway


class NoHandler:
    def invoke(self, handler, event):  # pragma: no cover - reaching it is the failure
        raise AssertionError(f"the gateway's own route reached handler {handler}")

    def close(self):
        pass


def own_gateway(tmp_path: Path) -> Gateway:
    """A gateway on ``tmp_path / "data"`` with its token made, and no handler behind it."""
    creds = Credentials(tmp_path / "data")
    creds.ensure_token()
    return Gateway(creds, NoHandler())
