"""Latency of MCP tool calls over stdio against capsule mcp --embedded (not a test: run it by hand).

PYTHONPATH=layers:. python tests/mcp/bench_mcp_stdio.py          # EMB=minilm for the real embedder
"""

import os
import statistics
import sys
import tempfile
import time

import anyio
from mcp import Client, StdioServerParameters

d = tempfile.mkdtemp()
env = {
    "PYTHONPATH": "layers:.",
    "CAPSULE_EMBEDDER": os.environ.get("EMB", "hashing"),
    "CAPSULE_DATA_DIR": d,
    "CAPSULE_PROJECT": "bench",
}


async def main():
    t0 = time.perf_counter()
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "capsule_cli", "mcp", "--embedded"], env=env, cwd=os.getcwd()
    )
    async with Client(params) as c:
        await c.list_tools()
        print(f"start + initialize + list_tools: {time.perf_counter() - t0:.2f}s")
        for name, make in [
            (
                "memory_store",
                lambda i: {"content": f"note {i}: sqlite write path uses BEGIN IMMEDIATE; detail {i * 7}"},
            ),
            ("memory_search", lambda i: {"query": f"sqlite write {i}", "k": 5}),
        ]:
            times = []
            for i in range(100):
                t = time.perf_counter()
                r = await c.call_tool(name, make(i))
                times.append(time.perf_counter() - t)
                assert not r.is_error
            times.sort()
            print(f"{name}: p50 {statistics.median(times) * 1000:.1f} ms, p95 {times[94] * 1000:.1f} ms (100 calls)")


anyio.run(main)
