"""What both stand-ins share: the log of calls, the failure switch and the vectors."""

from __future__ import annotations

import json
import os

from capsule.embedders.hashing import HashingEmbedder


def record(sdk: str, **call) -> None:
    path = os.environ.get("FAKE_SDK_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"sdk": sdk, **call}) + "\n")
    if os.environ.get("FAKE_SDK_FAIL"):
        raise ConnectionError(f"cannot reach the {sdk} API (FAKE_SDK_FAIL)")


def vectors(texts, dim: int) -> list[list[float]]:
    return HashingEmbedder(dim).embed(list(texts)).tolist()
