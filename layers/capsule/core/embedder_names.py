"""The embedders a setting or a command's ``--embedder`` may name.

A plain tuple, importing nothing: the commands and hooks that only register their options load
neither capsule.config (pydantic, ~0.3 s) nor typing. capsule.config's ``EmbedderName`` spells
the same names for the type checker; tests/unit/test_embedder_choice.py holds them equal."""

EMBEDDER_NAMES = ("auto", "minilm", "mpnet", "hashing", "voyage", "openai")
