"""How large an answer is as the hosted API sends it, so pages are cut to fit by construction.

A Lambda function's answer to API Gateway is one JSON document, ``{"statusCode": ..,
"headers": {..}, "body": "<the answer's text>"}``, and Lambda refuses any above 6 MB
(6,291,556 bytes) with a 502 that no retry cures. The body travels as a JSON string inside
that document, escaped a second time: every ``"`` and ``\\`` of a JSON answer doubles, a
newline takes two bytes and, on runtimes whose encoder writes ASCII (Python 3.11 and before),
each non-ASCII character takes six bytes per UTF-16 unit. A page counted in characters of its
own text (as export and sync once did) can therefore pass the limit by half again or more.

:func:`wrapped_bytes` is that escaped size, the larger of both encoders', so a page summed
with it stays under :data:`PAGE_BUDGET` whatever its text; the rest of the 6 MB is the margin
for the status, the headers (a cursor) and the document's own keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

LAMBDA_RESPONSE_BYTES = 6 * 1024 * 1024 + 100  # the limit Lambda's own error message names
PAGE_BUDGET = 5 * 1024 * 1024  # a page's body, escaped: leaves 1 MiB for status, headers and keys


def wrapped_bytes(text: str) -> int:
    """Bytes ``text`` takes as the ``body`` string of a Lambda response, quotes included.

    ``json.dumps`` with its default ``ensure_ascii`` is the encoder of older runtimes and never
    shorter than the UTF-8 one of newer ones (a character is at most 4 bytes in UTF-8 and
    6 or 12 escaped); its C encoder takes about 4 ms a MB."""
    return len(json.dumps(text))


def wrapped_json_bytes(json_text: str) -> int:
    """:func:`wrapped_bytes` of a JSON text, without a second encoding pass when it is ASCII:
    JSON text holds no raw control characters but its whitespace, so only its quotes,
    backslashes and tabs or line ends grow (one byte each) inside the wrapper."""
    if json_text.isascii():
        grown = sum(map(json_text.count, ('"', "\\", "\n", "\r", "\t")))
        return len(json_text) + 2 + grown
    return wrapped_bytes(json_text)


def fitting(sizes: Iterable[int], budget: int = PAGE_BUDGET) -> int:
    """How many of the leading items, of these wrapped sizes, one page holds: at least one
    (a page must move on), then as many as keep the sum within ``budget``."""
    count = total = 0
    for size in sizes:
        total += size
        if count and total > budget:
            break
        count += 1
    return count


__all__ = ["LAMBDA_RESPONSE_BYTES", "PAGE_BUDGET", "fitting", "wrapped_bytes", "wrapped_json_bytes"]
