"""A page's position: the last item's creation time and id, as the ``cursor`` a list returns
(``models.CURSOR_PATTERN``: every string of that shape decodes)."""

from __future__ import annotations

import re

from . import models
from .clock import to_epoch
from .errors import InvalidInput
from .records import MemoryRecord


def encode_cursor(record: MemoryRecord) -> str:
    """A page's position (see ``models.CURSOR_PATTERN``): every string of that shape decodes."""
    return f"{to_epoch(record.created_at):.6f}~{record.id.encode('utf-8').hex()}"


def decode_cursor(cursor: str) -> tuple[float, str]:
    """The (created_at epoch seconds, id) a cursor names: a store.base.Cursor."""
    if not re.fullmatch(models.CURSOR_PATTERN.strip("^$"), cursor):
        raise InvalidInput("cursor: is not a cursor this service returned", field="cursor")
    created, _, hex_id = cursor.partition("~")
    # Only a position to compare against: bytes that are not UTF-8 still order correctly enough.
    return float(created), bytes.fromhex(hex_id).decode("utf-8", "replace")
