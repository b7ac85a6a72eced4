"""Which embedder the settings pick, and why: a pure function of the settings and two probes.

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

A key whose client package is not installed does not stop the service: it falls back to the
offline choice and the reason says what to install (health and the project's first store
show it). ``CAPSULE_EMBEDDER`` naming one overrides all of this, and a missing key or package
is then an error.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from typing import Callable

from pydantic import SecretStr

from ..config import Settings

# name -> (client package, pip extra, environment variable of its key)
HOSTED = {"voyage": ("voyageai", "voyage", "VOYAGE_API_KEY"), "openai": ("openai", "openai", "OPENAI_API_KEY")}
PREFERRED_HOSTED = ("voyage", "openai")  # when several keys are set, the first wins


@dataclass(frozen=True)
class EmbedderChoice:
    name: str    # voyage | openai | minilm | hashing
    reason: str  # why, in words for health and explanations; never a key


def has_key(secret: SecretStr | None) -> bool:
    return secret is not None and secret.get_secret_value().strip() != ""


def package_installed(name: str) -> bool:
    """Whether ``import name`` would work, without importing it (the clients are slow to import)."""
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def choose_embedder(settings: Settings, *, offline_available: Callable[[], bool],
                    installed: Callable[[str], bool] = package_installed) -> EmbedderChoice:
    if settings.embedder != "auto":
        return EmbedderChoice(settings.embedder, f"CAPSULE_EMBEDDER is {settings.embedder!r}")
    keys = {"voyage": has_key(settings.voyage_api_key), "openai": has_key(settings.openai_api_key)}
    keyed = [name for name in PREFERRED_HOSTED if keys[name]]
    missing: list[str] = []
    for name in keyed:
        package, extra, variable = HOSTED[name]
        if installed(package):
            reason = f"{variable} is set"
            others = [HOSTED[n][2] for n in keyed if n != name]
            if others:
                reason += (f" ({', '.join(others)} too: {name} is preferred; "
                           f"set CAPSULE_EMBEDDER to choose)")
            return EmbedderChoice(name, reason)
        missing.append(f"{variable} is set but the '{package}' package is not installed "
                       f"(pip install 'capsule-memory[{extra}]')")
    if offline_available():
        return EmbedderChoice("minilm", "; ".join(missing) + "; using the offline model" if missing
                              else "no VOYAGE_API_KEY or OPENAI_API_KEY is set; the offline model is installed")
    lead = "; ".join(missing) if missing else "no VOYAGE_API_KEY or OPENAI_API_KEY is set"
    return EmbedderChoice("hashing", f"{lead}, and the offline model is not installed "
                                     "(pip install 'capsule-memory[local]'): hashing matches words, not meaning")


__all__ = ["EmbedderChoice", "HOSTED", "PREFERRED_HOSTED", "choose_embedder", "has_key", "package_installed"]
