"""The Vector Bridge fixpack files under ``fixpacks/`` and what an import must keep of each."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).parent / "fixpacks"
FILES = sorted(FOLDER.glob("*.json"))
FILE = {f.stem: f for f in FILES}

# Every key of each file that the format does not know, where the file has it.
KEPT = {
    "monorepo_shared_folder.json": ["signatures[1]._comment", "steps[0].payload.recursive"],
    "pnpm_outdated_lockfile.json": [
        "_comment", "id", "success_rate", "signatures[0]._comment", "steps[0].payload.description",
        "steps[1]._comment", "checks[1]._comment"],
    "railway_wrong_dockerfile.json": ["steps[0].payload.service", "checks[0]._comment"],
    "redis_enotfound_family.json": [
        "_comment", "steps[0].payload._comment", "steps[1].payload.description"],
}
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
    """The same value as a solution shows it back: under ``extra`` at the key's own level
    (the file's steps and checks have distinct orders in file order, so places match)."""
    *parents, key = path.split(".")
    return in_file(solution, ".".join([*parents, "extra", key]))
