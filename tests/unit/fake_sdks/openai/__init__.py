"""A stand-in for ``openai``: ``OpenAI(api_key, max_retries, timeout).embeddings.create(model, input)``."""

from fake_sdk_common import record, vectors  # fake_sdks/ is on the path, as this package is

DIMS = {"text-embedding-3-small": 1536}
clients: list = []


class _Item:
    def __init__(self, index, embedding):
        self.index, self.embedding, self.object = index, embedding, "embedding"


class _Response:
    def __init__(self, data):
        self.data = data


class _Embeddings:
    def create(self, model, input, **_):
        record("openai", model=model, n=len(input))
        rows = vectors(input, DIMS[model])
        return _Response([_Item(i, row) for i, row in reversed(list(enumerate(rows)))])  # any order


class OpenAI:
    def __init__(self, api_key=None, max_retries=2, timeout=None):
        if not api_key:
            raise ValueError("api_key is required")
        self.api_key, self.max_retries, self.timeout = api_key, max_retries, timeout
        self.embeddings = _Embeddings()
        clients.append(self)
