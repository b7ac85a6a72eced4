"""Which embedder the settings pick, and why: a pure function of the settings and one probe.

Under ``auto`` (the default) a hosted provider's key turns it on, as ``VOYAGE_API_KEY`` did in
the first Capsule and ``OPENAI_API_KEY`` in the Vector Bridge:

| keys set                    | embedder                                            |
| --------------------------- | --------------------------------------------------- |
| ``VOYAGE_API_KEY`` only     | voyage: voyage-3.5, 1024 dimensions                 |
| ``OPENAI_API_KEY`` only     | openai: text-embedding-3-small, 1536 dimensions     |
| both                        | voyage (the first Capsule's embedder, and the       |
|                             | deployment's default); CAPSULE_EMBEDDER=openai      |
|                             | picks OpenAI                                        |
| neither                     | minilm (offline) when installed, else hashing       |

``auto`` never picks mpnet (all-mpnet-base-v2, 768 dimensions, the ``mpnet`` extra): it is
~440 MB, about 17x minilm's cost per query, and through the product no better on LoCoMo
(docs/search.md), so only ``CAPSULE_EMBEDDER=mpnet`` turns it on.

A key is all a hosted embedder needs: both are called over HTTP with the standard library
(:mod:`capsule.embedders.http`), no client package. ``CAPSULE_EMBEDDER`` naming one overrides
all of this, and a missing key is then an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import SecretStr

from ..config import Settings

# name -> environment variable of its key
KEY_VARIABLES = {"voyage": "VOYAGE_API_KEY", "openai": "OPENAI_API_KEY"}
PREFERRED_HOSTED = ("voyage", "openai")  # when several keys are set, the first wins


@dataclass(frozen=True)
class EmbedderChoice:
    name: str  # voyage | openai | minilm | mpnet | hashing
    reason: str  # why, in words for health and explanations; never a key


def has_key(secret: SecretStr | None) -> bool:
    return secret is not None and secret.get_secret_value().strip() != ""


def choose_embedder(settings: Settings, *, offline_available: Callable[[], bool]) -> EmbedderChoice:
    if settings.embedder != "auto":
        return EmbedderChoice(settings.embedder, f"CAPSULE_EMBEDDER is {settings.embedder!r}")
    keys = {"voyage": has_key(settings.voyage_api_key), "openai": has_key(settings.openai_api_key)}
    keyed = [name for name in PREFERRED_HOSTED if keys[name]]
    if keyed:
        name, others = keyed[0], [KEY_VARIABLES[n] for n in keyed[1:]]
        reason = f"{KEY_VARIABLES[name]} is set"
        if others:
            reason += f" ({', '.join(others)} too: {name} is preferred; set CAPSULE_EMBEDDER to choose)"
        return EmbedderChoice(name, reason)
    if offline_available():
        return EmbedderChoice("minilm", "no VOYAGE_API_KEY or OPENAI_API_KEY is set; the offline model is installed")
    return EmbedderChoice(
        "hashing",
        "no VOYAGE_API_KEY or OPENAI_API_KEY is set, and the offline model is not "
        "installed (pip install 'capsule-memory[local]'): hashing matches words, "
        "not meaning",
    )


__all__ = ["KEY_VARIABLES", "PREFERRED_HOSTED", "EmbedderChoice", "choose_embedder", "has_key"]
