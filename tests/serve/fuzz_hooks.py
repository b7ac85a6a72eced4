"""Schemathesis hooks for tests/serve/test_fuzz.py (loaded through SCHEMATHESIS_HOOKS).

POST /v1/import takes JSON Lines (``application/x-ndjson``), a media type schemathesis has no
serializer for: its schema is a string, sent as the UTF-8 bytes it is.
"""

import json

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return (json.dumps(value) + "\n").encode()  # a negative case that is not a string: one JSON line
