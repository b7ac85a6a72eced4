"""The Vector Bridge's fixpack files, imported by ``capsule solutions import``, then found and applied
over MCP stdio: the structured results carry the kept keys, the text says what each step does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
from mcp import Client
from mcp_support import ROOT, ToolSession, capsule_env, mcp_params, new_data_dir

from tests.learning.fixpack_files import FILES, KEPT, in_file, kept_in, load

SUMMARIES = {  # one line of each file's steps, as the text result gives it
    "monorepo_shared_folder.json": "copy: copy packages/shared to apps/web/shared",
    "pnpm_outdated_lockfile.json": "patch: Run CI with the pnpm that wrote the lockfile",
    "railway_wrong_dockerfile.json": "env: set RAILWAY_DOCKERFILE_PATH",
    "redis_enotfound_family.json": "script: Confirm the connection from inside the service",
}


def import_files(data_dir: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "capsule_cli", "solutions", "import", *map(str, FILES), "--json"],
        cwd=ROOT,
        env=capsule_env(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [r["id"] for r in json.loads(done.stdout)]


def test_imported_files_are_found_shown_and_applied_over_mcp(tmp_path):
    data_dir = new_data_dir(tmp_path)
    ids = import_files(data_dir)

    async def main():
        async with Client(mcp_params(data_dir, "--embedded", "--project", "api")) as client:
            session = ToolSession(client)
            for path, solution_id in zip(FILES, ids):
                raw = load(path)
                found, text = await session.ok("solution_search", {"error": raw["signatures"][0]["text"]})
                top = found["results"][0]["solution"]
                assert top["id"] == solution_id, (path.name, text)
                for kept in KEPT[path.name]:
                    assert kept_in(top, kept) == in_file(raw, kept), kept
                assert SUMMARIES[path.name] in text, text
                applied, _ = await session.ok("solution_apply", {"solution_id": solution_id, "success": True})
                assert applied["solution"]["success_count"] == 1

    anyio.run(main)
