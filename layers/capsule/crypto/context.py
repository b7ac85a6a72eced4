"""The customer key sent with the request being served (``X-Capsule-BYOK``), set at the HTTP edge
for the length of one request. Kept apart from :mod:`.keys` so the edge sets it without loading
the ciphers."""

from __future__ import annotations

import contextvars
from typing import Any

request_key: contextvars.ContextVar[Any] = contextvars.ContextVar("capsule_byok", default=None)
BYOK_HEADER = "X-Capsule-BYOK"
