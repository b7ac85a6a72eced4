"""A cold start imports only what its route needs: ``health`` and ``get`` never load faiss
(capsule.search.hamming loads it at the first search of a large index), nor pymongo or boto3 until
the first request builds the service (its cost is then paid once per container). Each import runs in a fresh interpreter, as in Lambda."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBE = r"""
import json, sys
sys.path[:0] = [LAYERS, REPO]
__import__("functions.handlers." + sys.argv[1])
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def _top_level_modules(handler: str) -> set[str]:
    code = PROBE.replace("LAYERS", repr(str(REPO / "layers"))).replace("REPO", repr(str(REPO)))
    done = subprocess.run(
        [sys.executable, "-B", "-c", code, handler],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "CAPSULE_STORE": "mongo"},
        timeout=120,
    )
    return set(json.loads(done.stdout))


@pytest.mark.parametrize("handler", ["health", "get"])
def test_light_routes_do_not_load_faiss_or_the_aws_and_mongodb_clients(handler):
    loaded = _top_level_modules(handler)
    assert "functions" in loaded and "capsule" in loaded
    # (botocore itself is loaded by Powertools, for its user agent: not ours to avoid.)
    assert not loaded & {"faiss", "pymongo", "boto3"}, loaded & {"faiss", "pymongo", "boto3"}
