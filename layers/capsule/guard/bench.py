"""The guard's cost per KiB of text: ``python -m capsule.guard.bench [--repeat N]``.

Texts of the kinds a store carries (prose, a CI log holding secrets, a text full of look-alikes —
hashes, UUIDs, base64 —, non-ASCII prose) and adversarial ones (one unbroken token, a run of
``password=`` assignments, a run of digits), each at 1, 16 and 256 KiB: the time per KiB should
stay flat as the size grows (linear-time matching: RE2 for every secret rule). Prints one JSON
object per line and a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import time

from .detect import detect
from .policy import Policies, guard_text

_R = random.Random(7)


def _rnd(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_R.choice(alphabet) for _ in range(n))


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def samples() -> dict[str, str]:
    prose = (
        "We chose SQLite for the embedded mode because it needs no server; the hosted mode uses "
        "MongoDB Atlas with vector search. The retry fixed the flaky upload after the timeout was raised. "
    )
    log = (
        f"2024-10-15T12:30:00Z INFO deploy step 3/7 started pid=4111\n"
        f"export GITHUB_TOKEN=gh{'p'}_{_rnd(36)}\nDATABASE_URL=postgresql://app:{_rnd(16)}@db.internal:5432/prod\n"
        f"curl -H 'Authorization: Bearer {_rnd(40)}' https://api.acme.dev/v1/me -> 200 in 123 ms\n"
    )
    lookalikes = (
        f"request_id={_rnd(8, '0123456789abcdef')}-e29b-41d4-a716-446655440000 "
        f"commit {_rnd(40, '0123456789abcdef')} sha256 {_rnd(64, '0123456789abcdef')} "
        f"blob {_rnd(120, string.ascii_letters + string.digits + '+/')}== numpy 1.26.4 "
    )
    unicode = "Die Wiederholung behob den Upload-Fehler; 日本語のログ: タイムアウトを延長した。 Ünïcödé ✓ "
    return {
        "prose": prose,
        "ci-log-with-secrets": log,
        "look-alikes": lookalikes,
        "non-ascii": unicode,
        "adversarial-one-token": "a",
        "adversarial-assignments": "password=",
        "adversarial-digits": "4",
    }


def measure(text: str, repeat: int) -> float:
    """Best-of-``repeat`` seconds for one guard_text call (detection, policy, redaction)."""
    policies = Policies()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        guard_text(text, policies)
        best = min(best, time.perf_counter() - start)
    return best


def per_kib(kib: int = 16, repeat: int = 3) -> dict:
    """The guard's cost per KiB on each sample at one size (what ``capsule bench`` reports)."""
    costs = {name: round(measure(_fill(unit, kib * 1024), repeat) * 1e6 / kib, 1) for name, unit in samples().items()}
    typical = [costs[n] for n in ("prose", "ci-log-with-secrets", "look-alikes", "non-ascii")]
    return {
        "kib": kib,
        "us_per_kib": costs,
        "typical_us_per_kib": round(sum(typical) / len(typical), 1),
        "worst_us_per_kib": max(costs.values()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m capsule.guard.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default="1,16,256", help="KiB, comma-separated")
    args = parser.parse_args(argv)
    rows = []
    for name, unit in samples().items():
        for kib in (int(s) for s in args.sizes.split(",")):
            text = _fill(unit, kib * 1024)
            seconds = measure(text, args.repeat)
            rows.append(
                {
                    "text": name,
                    "kib": kib,
                    "findings": len(detect(text)),
                    "us_per_kib": round(seconds * 1e6 / kib, 1),
                    "ms_total": round(seconds * 1e3, 3),
                }
            )
            print(json.dumps(rows[-1]))
    print("\n| text | KiB | findings | µs per KiB | ms total |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['text']} | {r['kib']} | {r['findings']} | {r['us_per_kib']} | {r['ms_total']} |")


if __name__ == "__main__":
    main()
