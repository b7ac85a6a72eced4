"""Embedders behind one interface (base.Embedder): MiniLM and MPNet offline, hashing, remote HTTP, cached, shared.
May import: capsule.core, config, store (the embedding cache) and what lies below them.

Embedders behind one interface; :func:`build_embedder` picks one from the settings.
"""

from __future__ import annotations

import logging

from pydantic import SecretStr

from ..config import Settings
from ..core.errors import InvalidInput
from .base import Embedder, EmbedderInfo, describe, normalize
from .choice import KEY_VARIABLES, choose_embedder, has_key
from .failfast import FailFast
from .hashing import HashingEmbedder

logger = logging.getLogger("capsule.embedders")

__all__ = ["Embedder", "EmbedderInfo", "HashingEmbedder", "build_embedder", "describe", "normalize"]


def build_embedder(settings: Settings) -> Embedder:
    """The embedder the settings pick (:func:`capsule.embedders.choice.choose_embedder`), carrying
    its ``name`` and the ``reason`` it was chosen."""
    from . import minilm

    choice = choose_embedder(settings, offline_available=lambda: minilm.available(settings.model_dir))
    if choice.name == "hashing" and settings.embedder == "auto":
        logger.warning("%s", choice.reason)
    embedder: Embedder
    if choice.name == "hashing":
        embedder = HashingEmbedder()
    elif choice.name == "minilm":
        embedder = minilm.MiniLMEmbedder(settings.model_dir)
    elif choice.name == "mpnet":
        from .mpnet import MpnetEmbedder

        embedder = MpnetEmbedder(settings.model_dir, precision=settings.mpnet_precision)
    elif choice.name == "voyage":
        from .remote import VoyageEmbedder

        embedder = FailFast(VoyageEmbedder(_key(settings.voyage_api_key, "voyage"), base_url=settings.voyage_base_url))
    else:
        from .remote import OpenAIEmbedder

        embedder = FailFast(OpenAIEmbedder(_key(settings.openai_api_key, "openai"), base_url=settings.openai_base_url))
    embedder.reason = choice.reason  # type: ignore[union-attr]
    logger.info("embedder active: %s", describe(embedder).sentence())
    return embedder


def _key(secret: SecretStr | None, name: str) -> str:
    if not has_key(secret):
        variable = KEY_VARIABLES[name]
        raise InvalidInput(f"CAPSULE_EMBEDDER={name} needs {variable}", field=variable.lower())
    assert secret is not None
    return secret.get_secret_value().strip()
