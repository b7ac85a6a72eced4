"""The client and a request the server accepts as a job (202, functions.async_jobs): it is never
sent again; the job is polled with backoff until done and its result returned as if the call had
been synchronous (or the route's error raised); past the client's bound, StillRunning names it.
A scripted transport and a fake clock: no sockets, no real waits."""

from __future__ import annotations

import json

import pytest

from capsule.core import errors
from mcp_client.client import CapsuleClient, Retry, StillRunning
from mcp_client.transport import Response

MINED = {"patterns": [], "scanned": 3, "clusters": 0, "linked": 0, "explanation": "Mined 3 memories."}
JOB = "job_abc"
ACCEPTED = Response(
    202,
    {"Location": f"/v1/jobs/{JOB}", "Retry-After": "2", "Content-Type": "application/json"},
    json.dumps(
        {
            "id": JOB,
            "operation": "detect_patterns",
            "status": "queued",
            "location": f"/v1/jobs/{JOB}",
            "explanation": "accepted",
        }
    ).encode(),
)


def job(status: str, **more) -> Response:
    body = {"id": JOB, "operation": "detect_patterns", "status": status, "explanation": status, **more}
    return Response(200, {"Content-Type": "application/json"}, json.dumps(body).encode())


class Script:
    def __init__(self, *answers: Response) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[str, str]] = []
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self, method, url, headers, data, timeout):
        self.sent.append((method, url.split("://", 1)[1].split("/", 1)[1]))
        return self.answers.pop(0)

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def client(script: Script, **kwargs) -> CapsuleClient:
    retry = Retry(sleep=script.sleep, clock=lambda: script.now, random=lambda: 0.0)
    return CapsuleClient("http://127.0.0.1:9", retry=retry, send=script, **kwargs)


def test_a_job_is_polled_until_done_and_its_result_returned_as_the_call_s(tmp_path):
    script = Script(ACCEPTED, job("queued"), job("running"), job("succeeded", status_code=200, result=MINED))
    result = client(script).detect_patterns({"min_occurrences": 2})
    assert result.scanned == 3 and result.explanation == "Mined 3 memories."
    # the POST once (a 202 is never sent again), then polls; backoff from Retry-After, growing
    assert script.sent == [("POST", "v1/patterns/mine")] + [("GET", f"v1/jobs/{JOB}")] * 3
    assert script.waits == [2.0, 3.0, 4.5]


def test_a_failed_job_raises_the_route_s_error():
    error = {"code": "unavailable", "message": "the store is down", "details": None}
    script = Script(ACCEPTED, job("failed", status_code=503, error=error))
    with pytest.raises(errors.Unavailable, match="the store is down"):
        client(script).detect_patterns({})


def test_past_the_bound_the_call_says_the_job_is_still_running():
    script = Script(ACCEPTED, *[job("running")] * 20)
    with pytest.raises(StillRunning, match=JOB) as raised:
        client(script, job_wait_s=20).detect_patterns({})
    assert raised.value.details == [{"job": JOB, "location": f"/v1/jobs/{JOB}"}]
    assert script.now <= 20 and script.sent[0] == ("POST", "v1/patterns/mine")
    assert sum(1 for method, _ in script.sent if method == "POST") == 1


def test_a_tool_call_answers_a_short_text_naming_the_job():
    from mcp.server.mcpserver.exceptions import ToolError

    from mcp_client.tool_kit import run

    script = Script(ACCEPTED, *[job("running")] * 20)
    slow = client(script, job_wait_s=10)
    with pytest.raises(ToolError, match=f"job_running: the work is still running as job {JOB}"):
        run(lambda: slow.detect_patterns({}))
