"""Durability of ``capsule serve`` under load: 16 keep-alive clients x N mixed operations (store,
search, get), then every acknowledged store is read back from the database; then K rounds of
kill -9 of the server mid-load (8 clients), each followed by SQLite's integrity check.

    .venv/bin/python scripts/serve_durability.py /tmp/capsule-durability 10000 20
"""

import http.client
import json
import os
import random
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "layers"), str(ROOT)]
from capsule.store.sqlite import SQLiteStore
from tests.serve.server import Server


def load(server, clients, ops, stop=None):
    acked, lock = [], threading.Lock()

    def client(n):
        rng = random.Random(n)
        c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        h = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
        mine = []
        try:
            for i in range(ops):
                if stop and stop.is_set():
                    return
                r = rng.random()
                if r < 0.5 or not mine:
                    c.request(
                        "POST",
                        "/v1/memories",
                        json.dumps({"project": f"d{n % 4}", "content": f"c{n} w{i} {rng.random()}"}),
                        h,
                    )
                    resp = c.getresponse()
                    body = resp.read()
                    if resp.status == 201:
                        mid = json.loads(body)["memory"]["id"]
                        mine.append(mid)
                        with lock:
                            acked.append(mid)
                    else:
                        print("store", resp.status, body[:200])
                elif r < 0.8:
                    c.request(
                        "POST", "/v1/memories/search", json.dumps({"project": f"d{n % 4}", "query": "w1 c2", "k": 5}), h
                    )
                    resp = c.getresponse()
                    resp.read()
                    assert resp.status == 200, resp.status
                else:
                    c.request("GET", f"/v1/memories/{rng.choice(mine)}", headers=h)
                    resp = c.getresponse()
                    resp.read()
                    assert resp.status in (200, 404), resp.status  # 404: evicted by the rolling limit
        except (OSError, http.client.HTTPException):
            if not (stop and stop.is_set()):
                raise

    ts = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    [t.start() for t in ts]
    return ts, acked


root = Path(sys.argv[1])
ops = int(sys.argv[2])
rounds = int(sys.argv[3])
import shutil

shutil.rmtree(root, ignore_errors=True)
root.mkdir(parents=True)
server = Server(root)
ts, acked = load(server, 16, ops)
[t.join() for t in ts]
assert server.stop() == 0
store = SQLiteStore(root / "capsule.db")
missing = [m for m in acked if store.get("local", m, include_forgotten=True) is None]
store.close()
print(f"mixed: {len(acked)} acknowledged stores by 16 clients x {ops} ops, {len(missing)} lost")
bad = 0
for _ in range(rounds):
    server = Server(root)
    stop = threading.Event()
    ts, acked = load(server, 8, 10_000, stop)
    time.sleep(1.0 + random.random())
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait()
    stop.set()
    [t.join(60) for t in ts]
    time.sleep(0.5)
    ok = sqlite3.connect(root / "capsule.db", timeout=60).execute("PRAGMA integrity_check").fetchone()[0]
    bad += ok != "ok"
print(f"kill -9: {rounds} rounds, {bad} failed integrity checks")
