"""A stand-in for ``voyageai``: ``Client(api_key, max_retries, timeout).embed(texts, model, input_type)``."""

from fake_sdk_common import record, vectors  # fake_sdks/ is on the path, as this package is

DIMS = {"voyage-3.5": 1024}
clients: list = []


class EmbeddingsObject:
    def __init__(self, embeddings):
        self.embeddings = embeddings


class Client:
    def __init__(self, api_key=None, max_retries=0, timeout=None):
        if not api_key:
            raise ValueError("api_key is required")
        self.api_key, self.max_retries, self.timeout = api_key, max_retries, timeout
        clients.append(self)

    def embed(self, texts, model=None, input_type=None, truncation=True):
        record("voyageai", model=model, input_type=input_type, n=len(texts))
        return EmbeddingsObject(vectors(texts, DIMS[model]))
