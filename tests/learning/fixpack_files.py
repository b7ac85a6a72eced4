"""Fixpack files written to the Vector Bridge's schema under ``fixpacks/`` (ours), the original's own six
under ``fixtures/vector_bridge/`` (REAL), and what an import must keep of each."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).parent / "fixpacks"
FILES = sorted(FOLDER.glob("*.json"))
FILE = {f.stem: f for f in FILES}
# The Vector Bridge's own files, byte for byte (fixtures/vector_bridge/README.md says from where).
REAL_FOLDER = Path(__file__).parent / "fixtures" / "vector_bridge"
REAL = sorted(REAL_FOLDER.glob("*.json"))

# Every key of each file that the format does not know, where the file has it (a payload's
# 'description' is a key it knows: COMPAT.md §1.17).
KEPT = {
    "monorepo_shared_folder.json": ["signatures[1]._comment", "steps[0].payload.recursive"],
    "pnpm_outdated_lockfile.json": [
        "_comment",
        "id",
        "success_rate",
        "signatures[0]._comment",
        "steps[1]._comment",
        "checks[1]._comment",
    ],
    "railway_wrong_dockerfile.json": ["steps[0].payload.service", "checks[0]._comment"],
    "redis_enotfound_family.json": ["_comment", "steps[0].payload._comment"],
}
# The same for the original's files: each of their top-level keys is a field now.
REAL_KEPT = {f.name: [] for f in REAL} | {"002_shared_folder_sync.json": ["checks[1]._comment"]}
KINDS = {
    "monorepo_shared_folder.json": ["copy", "patch"],
    "pnpm_outdated_lockfile.json": ["cmd", "patch"],
    "railway_wrong_dockerfile.json": ["env", "cmd"],
    "redis_enotfound_family.json": ["patch", "script"],
}


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text("utf-8"))


_PART = re.compile(r"([^.\[]+)(?:\[(\d+)\])?")


def in_file(raw: dict[str, Any], path: str) -> Any:
    """The value at ``steps[0].payload._comment`` in the file as written."""
    value: Any = raw
    for name, index in _PART.findall(path):
        value = value[name]
        if index:
            value = value[int(index)]
    return value


def kept_in(solution: dict[str, Any], path: str) -> Any:
    """The same value as a solution shows it back: a step payload's key in the payload, as
    written; any other under ``extra`` at the key's own level (the file's steps and checks have
    distinct orders in file order, so places match)."""
    *parents, key = path.split(".")
    if parents and parents[-1] == "payload":
        return in_file(solution, path)
    return in_file(solution, ".".join([*parents, "extra", key]))
