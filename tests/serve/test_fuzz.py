"""Schemathesis, every check, against a real ``capsule serve`` on loopback: no 5xx, no schema violation.

Bounded for CI (a fixed seed, every operation, ``FUZZ_EXAMPLES`` cases per operation and phase,
a few minutes on two cores). The same run at a larger budget:

    CAPSULE_FUZZ_EXAMPLES=100 CAPSULE_FUZZ_PHASES=examples,coverage,fuzzing,stateful \
        .venv/bin/python -m pytest tests/serve/test_fuzz.py -q -s --timeout 2400

Every failure schemathesis reports fails this test, by operation and check, with the command
that replays it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from functions import routes

from .server import Server

pytestmark = pytest.mark.slow

FUZZ_EXAMPLES = int(os.environ.get("CAPSULE_FUZZ_EXAMPLES", "15"))
SEED = 20261201
# The stateful phase chains calls on the ids a run's server returns, so the seed does not fix
# its cases: the bounded run in CI keeps the phases the seed reproduces; the larger run adds it.
PHASES = os.environ.get("CAPSULE_FUZZ_PHASES", "examples,coverage,fuzzing")

HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE.parents[1] / "test-artifacts"


def schemathesis() -> str:
    return str(Path(sys.executable).with_name("st"))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("fuzz"))
    yield srv
    srv.stop()


def served_document(served: Server, into: Path) -> Path:
    """The document as the server serves it, fetched here: a worker builds it on its first request
    (imports every handler), which took 9.5 s under load, near schemathesis's 10 s to load a schema."""
    reply = served.request("GET", "/openapi.json")
    assert reply.status == 200, reply
    into.write_bytes(reply.body)
    return into


# The document states a body limit (its `x-capsule-max-body-bytes`: a body over it is refused with
# 413 before it is parsed, whatever else it holds). Schemathesis's checks are told so: a 413 is a
# refusal of an invalid body, and, for a valid one, the stated limit (a generated body of 35 MB).
NEGATIVE_REFUSALS = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
POSITIVE_ANSWERS = ["2xx", "3xx", "401", "403", "404", "409", "413", "429", "5xx"]


def stated_rules(document: dict) -> dict[str, list[str]]:
    """operationId -> the statuses its `x-capsule-rules` say a request its schemas allow may get:
    the rules the document states beside its schemas (relative to now, to what is stored, across
    fields). Read from the document, so a rule the server applies and does not state fails the run."""
    found: dict[str, list[str]] = {}
    for methods in document["paths"].values():
        for operation in methods.values():
            rules = operation.get("x-capsule-rules") if isinstance(operation, dict) else None
            if rules:
                found[operation["operationId"]] = sorted({str(rule["status"]) for rule in rules})
    return found


def config_file(document: Path) -> Path:
    """A schemathesis.toml honouring the document's extensions: its body limit (see above), and,
    per operation, the statuses its stated rules give a valid request (positive_data_acceptance
    then accepts them for that operation only)."""
    doc = json.loads(document.read_text())
    assert isinstance(doc.get("x-capsule-max-body-bytes"), int)
    text = (
        "[checks.negative_data_rejection]\n"
        f"expected-statuses = {json.dumps(NEGATIVE_REFUSALS)}\n"
        "[checks.positive_data_acceptance]\n"
        f"expected-statuses = {json.dumps(POSITIVE_ANSWERS)}\n"
    )
    for operation_id, statuses in sorted(stated_rules(doc).items()):
        text += (
            "[[operations]]\n"
            f"include-operation-id = {json.dumps(operation_id)}\n"
            "[operations.checks.positive_data_acceptance]\n"
            f"expected-statuses = {json.dumps(POSITIVE_ANSWERS + statuses)}\n"
        )
    path = document.with_name("schemathesis.toml")
    path.write_text(text)
    return path


def run(served: Server, report: Path) -> subprocess.CompletedProcess:
    document = served_document(served, report.with_name("openapi.json"))
    return subprocess.run(
        [
            schemathesis(),
            "--config-file",
            str(config_file(document)),
            "run",
            str(document),
            "--url",
            served.url,
            "--checks",
            "all",
            "--seed",
            str(SEED),
            "--phases",
            PHASES,
            "--max-examples",
            str(FUZZ_EXAMPLES),
            "--workers",
            "1",
            "--no-color",
            "--output-truncate",
            "true",
            # ignored_auth sends requests without the token and expects 401: the header is the only credential.
            "-H",
            f"Authorization: Bearer {served.token}",
            "--report",
            "json",
            "--report-json-path",
            str(report),
            "--request-timeout",
            "30",
            # No example database: each run is the seed's own, not a replay of earlier runs' finds.
            "--generation-database",
            "none",
            # "Data generation too slow" measures the machine's load (the suite runs modules side by
            # side), not the API: it failed a run under load 16 and never an idle one.
            "--suppress-health-check",
            "too_slow",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=report.parent,
        env={
            **os.environ,
            "SCHEMATHESIS_HOOKS": "fuzz_hooks",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
        },
    )


STATEFUL = "Stateful tests"  # what the report names the stateful phase's failures by


def failures_by_operation(failures: list[dict], output: str = "") -> list[tuple[str, str]]:
    """Every failure, by (check, operation); none is set aside here (a rule the document states is
    honoured by the run's configuration, see config_file). A stateful failure is named by the call
    its chain ended on, read from schemathesis's output (its report names only the phase)."""
    found = [
        (failure["code"], operation)
        for failure in failures
        for operation in failure["operations"]
        if operation != STATEFUL
    ]
    if any(STATEFUL in failure["operations"] for failure in failures):
        found += stateful_failures(output) or [("?", STATEFUL)]  # unread: never set aside
    return found


def stateful_failures(output: str) -> list[tuple[str, str]]:
    """(check, operation) of each stateful case in the output: its check codes and the route of
    the last request it shows (``curl -X METHOD ... URL``)."""
    section = output.split(f" {STATEFUL} ", 1)[1].split("\n=====", 1)[0] if f" {STATEFUL} " in output else ""
    found = []
    for case in section.split("Test Case ID:")[1:]:
        calls = re.findall(r"^\s*curl -X (\w+) .* http://[^/\s]+(/\S*)\s*$", case, flags=re.MULTILINE)
        operation = route_of(*calls[-1]) if calls else STATEFUL
        found += [(code, operation) for code in re.findall(r"^- (ST\d+) ", case, flags=re.MULTILINE)]
    return found


def route_of(method: str, path: str) -> str:
    """``METHOD /route/{template}`` of the route table for a request's method and path."""
    for route in routes.ROUTES:
        if route.method == method and re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", route.path), path.split("?")[0]):
            return f"{method} {route.path}"
    return f"{method} {path}"


@pytest.mark.timeout(1800)  # about 2 minutes here at the bounded budget; the larger budget takes longer
def test_schemathesis_finds_no_5xx_and_no_schema_violation(served, tmp_path):
    report = tmp_path / "schemathesis.json"
    done = run(served, report)
    summary = json.loads(report.read_text())
    counts = summary["test_cases"]
    print(
        f"\nschemathesis {summary['schemathesis_version']}, seed {SEED}, {FUZZ_EXAMPLES} examples:"
        f" {summary['operations']['tested']}/{summary['operations']['total']} operations,"
        f" {counts['generated']} cases, {counts['unique_failures']} unique failures,"
        f" {sum(f['count'] for f in summary['failures'])} by check: "
        + ", ".join(f"{f['code']} {f['title']} x{f['count']}" for f in summary["failures"])
    )
    # Kept where a failing CI run leaves it (test-artifacts/, as the console test's screenshot).
    log = ARTIFACTS / "schemathesis.txt"
    log.parent.mkdir(exist_ok=True)
    log.write_text(done.stdout + done.stderr)
    # Every route of the one route table is an operation of the document (the document itself too:
    # loaded from a file, schemathesis tests its route like any other).
    operations = len(routes.ROUTES)
    assert summary["complete"] and summary["operations"]["tested"] == summary["operations"]["total"] == operations
    assert not summary["errors"], f"schemathesis errors; its output: {log}"
    found = failures_by_operation(summary["failures"], done.stdout)
    assert found == [], f"failures (its output, with a curl for each: {log})"
    assert "[500]" not in done.stdout, f"a 500 answer; its output: {log}"
