# python scripts/scale/workers_existing.py DB QUERY_FILE.npz: two service processes over one database and its index snapshot (beside it, in index/), their RSS and PSS
import json
import os
import sqlite3
import sys
from pathlib import Path

import numpy as np

db = Path(sys.argv[1])
qf = Path(sys.argv[2])
conn = sqlite3.connect(db)
total = conn.execute("select max(seq) from memories").fetchone()[0]
rng = np.random.default_rng(9)
rows = [
    conn.execute("select content, embedding from memories where seq = ?", (int(s),)).fetchone()
    for s in rng.integers(1, total + 1, 30)
]
conn.close()
texts = [" ".join(c.split()[:3]) + f" q{j}" for j, (c, _) in enumerate(rows)]
vecs = np.stack([np.frombuffer(e, dtype="<f4") for _, e in rows])
vecs = vecs + rng.standard_normal(vecs.shape).astype(np.float32) * (0.5 / np.sqrt(vecs.shape[1]))
vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
np.savez(qf, texts=np.array(texts), vectors=vecs)
from capsule_cli.bench_scale import workers

out = workers(db, 1024, qf, 2)
out["load_average"] = os.getloadavg()
print(json.dumps(out))
