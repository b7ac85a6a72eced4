"""Readable tables for people; ``--json`` output is the result model as JSON."""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # a command answered by the local server prints without loading pydantic or typing
    from collections.abc import Sequence
    from typing import Any

    from pydantic import BaseModel


def as_json(result: BaseModel | dict | list) -> str:
    if hasattr(result, "model_dump_json"):  # a pydantic model
        return result.model_dump_json(indent=2, by_alias=True)
    return json.dumps(result, indent=2, default=str, ensure_ascii=False)


def _cell(value: Any, width: int) -> str:
    text = "" if value is None else str(value).replace("\n", " ")
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def terminal_columns(fallback: int = 120) -> int:
    """shutil.get_terminal_size's columns (COLUMNS, else the terminal's, else ``fallback``),
    without importing shutil (and its compression modules) on every command's start."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else fallback


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, wide: str | None = None) -> str:
    """A plain text table; the ``wide`` column takes the width the terminal has left."""
    columns = terminal_columns()
    widths = [max([len(h)] + [len(_cell(r[i], 10_000)) for r in rows]) for i, h in enumerate(headers)]
    if wide in headers:
        i = headers.index(wide)
        others = sum(w for j, w in enumerate(widths) if j != i) + 2 * (len(headers) - 1)
        widths[i] = max(20, min(widths[i], columns - others))
    widths = [min(w, 60) if headers[j] != wide else w for j, w in enumerate(widths)]
    line = "  ".join(h.upper().ljust(widths[i]) for i, h in enumerate(headers))
    body = ["  ".join(_cell(v, widths[i]).ljust(widths[i]) for i, v in enumerate(r)) for r in rows]
    return "\n".join([line.rstrip(), *(b.rstrip() for b in body)])
