"""A hook's write waits in the spool (a plain file) while it is sent: secrets never reach it."""

import json

from mcp_client.spool import Spool

from .corpus import AKIA, GHP


def test_the_spool_file_holds_no_secret(tmp_path):
    spool = Spool(tmp_path / "spool")
    path = spool.put(
        "store",
        {"project": "p", "content": f"token {GHP} and key {AKIA}, mail jane@acme.io", "meta": {"source": f"{AKIA}"}},
        inflight=True,
    )
    raw = path.read_bytes()
    assert AKIA.encode() not in raw and GHP.encode() not in raw
    kept = json.loads(raw)["request"]
    assert kept["content"] == "token [REDACTED:github-token] and key [REDACTED:aws-access-key], mail jane@acme.io"
    assert kept["meta"]["source"] == "[REDACTED:aws-access-key]"
