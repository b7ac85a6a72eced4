"""The embedders a setting or a command's ``--embedder`` may name: one list for both.

Kept apart from capsule.config (pydantic, ~0.3 s to import) so the commands and hooks that only
register their options do not pay for the settings."""

from __future__ import annotations

from typing import Literal, get_args

EmbedderName = Literal["auto", "minilm", "mpnet", "hashing", "voyage", "openai"]
EMBEDDER_NAMES: tuple[str, ...] = get_args(EmbedderName)
