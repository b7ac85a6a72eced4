"""``capsule cloud``: the hosted deployment's one-off steps, run as the real command."""

from __future__ import annotations

import json
import subprocess

from functions.authorizer import decide
from tests.conftest import CLI, cli_env


def run(tmp_path, *args, **env):
    return subprocess.run(
        [*CLI, "cloud", *args], env=cli_env(tmp_path, **env), capture_output=True, text=True, timeout=60
    )


def test_new_api_key_prints_a_secret_entry_the_authorizer_accepts(tmp_path):
    result = run(tmp_path, "new-api-key", "ci", "--tenant", "team-a", "--json")
    assert result.returncode == 0, result.stderr
    made = json.loads(result.stdout)
    assert made["key"] not in json.dumps(made["secret_entry"])  # only the hash goes in the secret
    event = {"headers": {"authorization": f"Bearer {made['key']}"}}
    assert decide(event, {"api_keys": made["secret_entry"]}) == {
        "isAuthorized": True,
        "context": {"tenant": "team-a", "key": "ci"},
    }


def test_setup_atlas_without_a_uri_fails_with_one_line(tmp_path):
    result = run(tmp_path, "setup-atlas")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "capsule: error: the MongoDB store needs CAPSULE_MONGODB_URI (or the deployment's secret)"
    ]


def test_setup_atlas_refuses_dimensions_that_are_not_the_embedders_before_touching_the_cluster(tmp_path):
    # the hashing embedder makes 384-dimension vectors; nothing listens on port 9
    result = run(
        tmp_path,
        "setup-atlas",
        "--dimensions",
        "1536",
        CAPSULE_MONGODB_URI="mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=100",
    )
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("capsule: error: --dimensions 1536 is not the embedder's 384 (hashing")
    )
