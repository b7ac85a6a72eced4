"""Ingest N bench memories (1024-d) into P projects through ``capsule bench``'s ingest (the
store's bulk insert) and print its report: wall and CPU rates, per tenth, database bytes.

    python scripts/scale/ingest_rate.py 100000 1 /tmp/scale [--keep]
"""

import json
import sys
from pathlib import Path

from capsule_cli.bench_data import ingest, make_dataset

n, projects, folder = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
data = make_dataset(n, 1024, 10, seed=1 if projects == 1 else n + 1024)
db = folder / (f"ing-{n}-1.db" if projects == 1 else f"glob-{n}-{projects}-1024.db")
for path in folder.glob(db.name + "*"):
    path.unlink()
print(json.dumps(ingest(db, data, projects)))
if "--keep" not in sys.argv:
    for path in folder.glob(db.name + "*"):
        path.unlink()
