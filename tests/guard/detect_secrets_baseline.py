"""The detect-secrets library (Yelp, 1.5.0) on the same corpus, for comparison with our detector.

Run in a venv that has detect-secrets (it is not a dependency of Capsule Memory):
    python -m venv /tmp/ds && /tmp/ds/bin/pip install detect-secrets==1.5.0
    /tmp/ds/bin/python tests/guard/detect_secrets_baseline.py > /tmp/ds.json
    .venv/bin/python -m tests.guard.evaluate /tmp/ds.json
It prints, per corpus text, the findings as [kind, start, end], mapped to our kinds.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import FALSE_POSITIVES, TRUE_POSITIVES  # noqa: E402
from detect_secrets.core.scan import scan_line  # noqa: E402
from detect_secrets.settings import default_settings  # noqa: E402

KINDS = {
    "AWS Access Key": "aws-access-key",
    "GitHub Token": "github-token",
    "Slack Token": "slack-token",
    "OpenAI Token": "openai-key",
    "Private Key": "private-key",
    "JSON Web Token": "jwt",
    "Secret Keyword": "aws-secret-key",
}


def findings(text: str) -> list:
    out, offset = [], 0
    for line in text.split("\n"):
        for secret in scan_line(line):
            value = secret.secret_value or ""
            start = line.find(value) if value else -1
            kind = KINDS.get(secret.type, secret.type)
            out.append([kind, offset + max(start, 0), offset + max(start, 0) + len(value)])
        offset += len(line) + 1
    return out


with default_settings():
    texts = [t for t, _ in TRUE_POSITIVES] + FALSE_POSITIVES
    print(json.dumps([findings(t) for t in texts]))
