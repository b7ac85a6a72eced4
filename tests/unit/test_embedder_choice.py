"""Under ``auto`` a hosted key turns its embedder on (the seeds' settings); health and a project's
first store say which embedder is in use. The providers are the stand-in HTTP servers of
tests/support/fake_provider.py on loopback, reached through the real transport
(``VOYAGE_BASE_URL`` / ``OPENAI_BASE_URL``)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from capsule.config import Settings
from capsule.core.errors import InvalidInput, Unavailable
from capsule.embedders import build_embedder, describe, remote
from capsule.embedders.choice import choose_embedder
from capsule.embedders.failfast import FailFast
from capsule.runtime.service import build_service
from tests.support.fake_provider import CLOSE, FakeProvider


@pytest.fixture
def voyage():
    with FakeProvider("voyage", "pa-key") as server:
        yield server


@pytest.fixture
def openai():
    with FakeProvider("openai", "sk-key") as server:
        yield server


@pytest.fixture
def no_sdks(monkeypatch):
    """``import voyageai`` and ``import openai`` fail, as on a machine without them."""
    for name in ("voyageai", "openai"):
        monkeypatch.setitem(sys.modules, name, None)


def pick(env: dict[str, str], *, offline: bool = True):
    return choose_embedder(Settings.from_env(env), offline_available=lambda: offline)


@pytest.mark.parametrize(
    "env, offline, chosen",
    [
        ({"VOYAGE_API_KEY": "pa-1"}, True, "voyage"),
        ({"OPENAI_API_KEY": "sk-1"}, True, "openai"),
        ({"VOYAGE_API_KEY": "pa-1", "OPENAI_API_KEY": "sk-1"}, True, "voyage"),
        ({}, True, "minilm"),
        ({}, False, "hashing"),
        ({"VOYAGE_API_KEY": "pa-1", "OPENAI_API_KEY": "sk-1", "CAPSULE_EMBEDDER": "openai"}, True, "openai"),
        ({"VOYAGE_API_KEY": "pa-1", "CAPSULE_EMBEDDER": "hashing"}, True, "hashing"),
        ({"OPENAI_API_KEY": "sk-1", "CAPSULE_EMBEDDER": "minilm"}, True, "minilm"),
        ({"CAPSULE_EMBEDDER": "mpnet"}, False, "mpnet"),  # only when named: auto never picks it
        ({"VOYAGE_API_KEY": "", "OPENAI_API_KEY": "sk-1"}, True, "openai"),  # an empty key is no key
        ({"VOYAGE_API_KEY": "pa-1", "CAPSULE_EMBEDDER": "auto"}, True, "voyage"),
        ({"VOYAGE_API_KEY": "pa-1"}, False, "voyage"),  # a key is enough: no package, no offline model
        ({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, False, "hashing"),  # a URL without a key is no key
    ],
)
def test_the_embedder_choice_table(env, offline, chosen):
    assert pick(env, offline=offline).name == chosen


def test_the_reason_says_why_and_never_shows_a_key():
    both = pick({"VOYAGE_API_KEY": "pa-secret", "OPENAI_API_KEY": "sk-secret"})
    assert both.reason == (
        "VOYAGE_API_KEY is set (OPENAI_API_KEY too: voyage is preferred; set CAPSULE_EMBEDDER to choose)"
    )
    assert pick({"OPENAI_API_KEY": "sk-secret"}).reason == "OPENAI_API_KEY is set"
    assert pick({"CAPSULE_EMBEDDER": "openai"}).reason == "CAPSULE_EMBEDDER is 'openai'"
    assert "secret" not in both.reason
    assert "pip install" not in pick({"VOYAGE_API_KEY": "pa-1"}, offline=False).reason


def test_voyage_api_key_alone_builds_voyage_3_5_with_1024_dimensions(voyage, no_sdks, tmp_path):
    embedder = build_embedder(
        Settings.from_env(
            {"VOYAGE_API_KEY": "pa-key", "VOYAGE_BASE_URL": voyage.url, "CAPSULE_DATA_DIR": str(tmp_path)}
        )
    )
    info = describe(embedder)
    assert (info.name, info.model, info.dims, info.reason) == ("voyage", "voyage-3.5", 1024, "VOYAGE_API_KEY is set")
    client = embedder.inner._client
    assert (client.timeout_s, client.retries) == (remote.TIMEOUT_S, remote.RETRIES) == (8.0, 1)  # bounded: never a hang
    vectors = embedder.embed(["redis ENOTFOUND", "redis ENOTFOUND"], kind="query")
    assert vectors.shape == (2, 1024) and np.allclose(np.linalg.norm(vectors, axis=1), 1)
    assert [(c["path"], c["auth"], c["status"]) for c in voyage.calls] == [("/v1/embeddings", "Bearer pa-key", 200)]
    assert voyage.calls[0]["body"] == {"input": ["redis ENOTFOUND"] * 2, "model": "voyage-3.5", "input_type": "query"}


def test_openai_api_key_alone_builds_text_embedding_3_small_with_1536_dimensions(openai, no_sdks, tmp_path):
    embedder = build_embedder(
        Settings.from_env(
            {"OPENAI_API_KEY": "sk-key", "OPENAI_BASE_URL": openai.url, "CAPSULE_DATA_DIR": str(tmp_path)}
        )
    )
    assert (describe(embedder).name, embedder.model_id, embedder.dim) == ("openai", "text-embedding-3-small", 1536)
    client = embedder.inner._client
    assert (client.timeout_s, client.retries) == (remote.TIMEOUT_S, remote.RETRIES)  # bounded: never a hang
    texts = ["first text", "second, longer text", "third"]
    out = embedder.embed(texts)
    assert out.shape == (3, 1536)
    alone = embedder.embed([texts[0]])[0]
    assert out[0] @ alone > 0.999 > out[2] @ alone  # the provider answers in any order; ours is put back
    assert openai.calls[0]["body"] == {"input": texts, "model": "text-embedding-3-small", "encoding_format": "float"}
    assert {c["auth"] for c in openai.calls} == {"Bearer sk-key"} and {c["status"] for c in openai.calls} == {200}


def test_a_named_hosted_embedder_needs_only_its_key(openai, no_sdks, tmp_path):
    named = build_embedder(
        Settings(data_dir=tmp_path, embedder="openai", openai_api_key="sk-key", openai_base_url=openai.url)
    )
    assert named.embed(["no client package"]).shape == (1, 1536)
    with pytest.raises(InvalidInput, match="needs VOYAGE_API_KEY"):
        build_embedder(Settings(data_dir=tmp_path, embedder="voyage", voyage_api_key="  "))


def test_voyage_api_base_the_voyage_sdks_name_works_too(voyage, tmp_path):
    settings = Settings.from_env({"VOYAGE_API_KEY": "pa-key", "VOYAGE_API_BASE": voyage.url})
    assert settings.voyage_base_url == voyage.url
    assert build_embedder(settings).embed(["via VOYAGE_API_BASE"]).shape == (1, 1024) and len(voyage.calls) == 1
    same = {"VOYAGE_BASE_URL": voyage.url, "VOYAGE_API_BASE": voyage.url}
    assert Settings.from_env(same).voyage_base_url == voyage.url
    with pytest.raises(InvalidInput, match="^VOYAGE_BASE_URL and VOYAGE_API_BASE name different URLs") as caught:
        Settings.from_env({"VOYAGE_BASE_URL": voyage.url, "VOYAGE_API_BASE": "https://api.voyageai.com/v1"})
    assert caught.value.field == "voyage_base_url"


@pytest.mark.parametrize(
    "variable, value",
    [
        ("VOYAGE_BASE_URL", "ftp://127.0.0.1/v1"),
        ("OPENAI_BASE_URL", "127.0.0.1:8080/v1"),
        ("OPENAI_BASE_URL", "https://"),
        ("VOYAGE_BASE_URL", "http://127.0.0.1:port/v1"),
        ("VOYAGE_API_BASE", "file:///etc/passwd"),
    ],
)
def test_a_base_url_must_be_http_and_is_named(variable, value):
    with pytest.raises(InvalidInput) as caught:
        Settings.from_env({variable: value})
    setting = "openai_base_url" if variable.startswith("OPENAI") else "voyage_base_url"
    named = "OPENAI_BASE_URL" if setting == "openai_base_url" else "VOYAGE_BASE_URL"
    assert caught.value.field == setting
    assert caught.value.message == f"{setting}: {named} must be an http:// or https:// URL with a host"


def test_the_project_first_store_and_health_name_the_embedder(voyage, tmp_path):
    service = build_service(
        Settings.from_env(
            {"VOYAGE_API_KEY": "pa-key", "VOYAGE_BASE_URL": voyage.url, "CAPSULE_DATA_DIR": str(tmp_path)}
        )
    )
    first = service.store_memory("t", {"project": "app", "content": "Deploy with the blue/green switch"})
    assert first.explanation.endswith(" Embedder: voyage (voyage-3.5, 1024 dimensions): VOYAGE_API_KEY is set.")
    assert first.memory.model == "voyage-3.5" and first.memory.status != "pending_embedding"
    second = service.store_memory("t", {"project": "app", "content": "Roll back with the switch"})
    assert "Embedder" not in second.explanation  # said once, on the project's first store
    ingested = service.ingest("t", {"project": "docs", "text": "A runbook.", "path": "run.md"})
    assert "Embedder: voyage (voyage-3.5, 1024 dimensions)" in ingested.explanation
    assert {c["body"]["input_type"] for c in voyage.calls} == {"document"}
    assert {c["status"] for c in voyage.calls} == {200}

    from functions import app
    from functions.handlers.health import handler
    from tests.api.events import event

    app.set_service(service)
    try:
        reply = handler(event("health", tenant="t"), app.LocalContext(function_name="health", aws_request_id="r1"))
    finally:
        app.set_service(None)
    body = json.loads(reply["body"])
    assert reply["statusCode"] == 200
    assert body["embedder"] == {
        "name": "voyage",
        "model": "voyage-3.5",
        "dims": 1024,
        "reason": "VOYAGE_API_KEY is set",
    }
    assert "Embedder: voyage (voyage-3.5, 1024 dimensions)" in body["explanation"]


def test_an_unreachable_provider_stores_as_pending_and_is_not_waited_on_again(openai, tmp_path):
    openai.failing = CLOSE  # every connection closed with no answer, as a host going away
    service = build_service(
        Settings.from_env(
            {"OPENAI_API_KEY": "sk-key", "OPENAI_BASE_URL": openai.url, "CAPSULE_DATA_DIR": str(tmp_path)}
        )
    )
    first = service.store_memory("t", {"project": "app", "content": "ioredis ENOTFOUND redis.railway.internal"})
    assert first.memory.status == "pending_embedding"
    assert (
        "No embedding could be made (text-embedding-3-small could not embed: HttpError: no answer from "
        "127.0.0.1: RemoteDisconnected"
    ) in first.explanation
    tried = len(openai.calls)
    assert tried == 1 + remote.RETRIES == 2  # the first attempt and its retry
    openai.failing = None  # back; the next 60 s still do not wait on it
    second = service.store_memory("t", {"project": "app", "content": "family=0 fixed it"})
    assert "not retried for another" in second.explanation and second.memory.status == "pending_embedding"
    assert len(openai.calls) == tried  # the second did not call out
    found = service.search("t", {"project": "app", "query": "ENOTFOUND redis"})
    assert found.results[0].id == first.memory.id and "keyword only" in found.explanation
    assert len(openai.calls) == tried


def test_a_refused_key_is_pending_with_the_providers_reason_and_no_key(voyage, tmp_path):
    service = build_service(
        Settings.from_env(
            {"VOYAGE_API_KEY": "pa-wrong-key", "VOYAGE_BASE_URL": voyage.url, "CAPSULE_DATA_DIR": str(tmp_path)}
        )
    )
    stored = service.store_memory("t", {"project": "app", "content": "a memory"})
    assert stored.memory.status == "pending_embedding"
    assert (
        "voyage-3.5 could not embed: HttpError: 127.0.0.1 answered 401: Provided API key is invalid."
        in stored.explanation
    )
    assert "pa-wrong-key" not in stored.explanation and len(voyage.calls) == 1  # a refusal is not retried


def test_fail_fast_retries_after_the_cool_down():
    class Down:
        model_id, dim, calls = "m", 2, 0

        def embed(self, texts, *, kind="document"):
            Down.calls += 1
            raise Unavailable("m could not embed: ConnectionError")

    now = [0.0]
    embedder = FailFast(Down(), cool_s=60, clock=lambda: now[0])
    for _ in range(3):
        with pytest.raises(Unavailable):
            embedder.embed(["x"])
    assert Down.calls == 1
    now[0] = 61.0
    with pytest.raises(Unavailable, match="^m could not embed: ConnectionError$"):
        embedder.embed(["x"])
    assert Down.calls == 2


def test_the_commands_offer_exactly_the_embedders_the_settings_take():
    from typing import get_args

    from capsule.config import EmbedderName
    from capsule.core.embedder_names import EMBEDDER_NAMES

    assert get_args(EmbedderName) == EMBEDDER_NAMES
