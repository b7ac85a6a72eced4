"""Under ``auto`` a hosted key turns its embedder on (the seeds' settings); health and a project's
first store say which embedder is in use. The providers' client packages are the stand-ins in
``fake_sdks/`` (same signatures, no network)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from capsule.config import Settings
from capsule.embedders import build_embedder, describe
from capsule.embedders.choice import choose_embedder
from capsule.embedders.failfast import FailFast
from capsule.errors import InvalidInput, Unavailable
from capsule.runtime import build_service

FAKE_SDKS = Path(__file__).parent / "fake_sdks"
STAND_INS = ("voyageai", "openai", "fake_sdk_common")


@pytest.fixture
def sdks(monkeypatch):
    """The stand-in client packages importable as ``voyageai`` and ``openai``."""
    for name in STAND_INS:
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(FAKE_SDKS))
    yield
    for name in STAND_INS:
        sys.modules.pop(name, None)


def pick(env: dict[str, str], *, offline: bool = True, installed=lambda name: True):
    return choose_embedder(Settings.from_env(env), offline_available=lambda: offline, installed=installed)


@pytest.mark.parametrize("env, offline, chosen", [
    ({"VOYAGE_API_KEY": "pa-1"}, True, "voyage"),
    ({"OPENAI_API_KEY": "sk-1"}, True, "openai"),
    ({"VOYAGE_API_KEY": "pa-1", "OPENAI_API_KEY": "sk-1"}, True, "voyage"),
    ({}, True, "minilm"),
    ({}, False, "hashing"),
    ({"VOYAGE_API_KEY": "pa-1", "OPENAI_API_KEY": "sk-1", "CAPSULE_EMBEDDER": "openai"}, True, "openai"),
    ({"VOYAGE_API_KEY": "pa-1", "CAPSULE_EMBEDDER": "hashing"}, True, "hashing"),
    ({"OPENAI_API_KEY": "sk-1", "CAPSULE_EMBEDDER": "minilm"}, True, "minilm"),
    ({"VOYAGE_API_KEY": "", "OPENAI_API_KEY": "sk-1"}, True, "openai"),  # an empty key is no key
    ({"VOYAGE_API_KEY": "pa-1", "CAPSULE_EMBEDDER": "auto"}, True, "voyage"),
])
def test_the_embedder_choice_table(env, offline, chosen):
    assert pick(env, offline=offline).name == chosen


def test_the_reason_says_why_and_never_shows_a_key():
    both = pick({"VOYAGE_API_KEY": "pa-secret", "OPENAI_API_KEY": "sk-secret"})
    assert both.reason == ("VOYAGE_API_KEY is set (OPENAI_API_KEY too: voyage is preferred; "
                           "set CAPSULE_EMBEDDER to choose)")
    assert pick({"OPENAI_API_KEY": "sk-secret"}).reason == "OPENAI_API_KEY is set"
    assert pick({"CAPSULE_EMBEDDER": "openai"}).reason == "CAPSULE_EMBEDDER is 'openai'"
    assert "secret" not in both.reason


def test_a_key_without_its_client_package_falls_back_and_says_what_to_install():
    missing = pick({"VOYAGE_API_KEY": "pa-1"}, installed=lambda name: False)
    assert missing.name == "minilm"
    assert missing.reason == ("VOYAGE_API_KEY is set but the 'voyageai' package is not installed "
                              "(pip install 'capsule-memory[voyage]'); using the offline model")
    # With both keys and only OpenAI's package, OpenAI serves.
    assert pick({"VOYAGE_API_KEY": "pa-1", "OPENAI_API_KEY": "sk-1"},
                installed=lambda name: name == "openai").name == "openai"
    hashing = pick({"OPENAI_API_KEY": "sk-1"}, offline=False, installed=lambda name: False)
    assert hashing.name == "hashing" and "capsule-memory[openai]" in hashing.reason


def test_voyage_api_key_alone_builds_voyage_3_5_with_1024_dimensions(sdks, tmp_path):
    embedder = build_embedder(Settings.from_env({"VOYAGE_API_KEY": "pa-key", "CAPSULE_DATA_DIR": str(tmp_path)}))
    info = describe(embedder)
    assert (info.name, info.model, info.dims, info.reason) == ("voyage", "voyage-3.5", 1024, "VOYAGE_API_KEY is set")
    import voyageai

    client = voyageai.clients[-1]
    assert (client.api_key, client.max_retries, client.timeout) == ("pa-key", 2, 15.0)  # bounded: never a hang
    vectors = embedder.embed(["redis ENOTFOUND", "redis ENOTFOUND"], kind="query")
    assert vectors.shape == (2, 1024) and np.allclose(np.linalg.norm(vectors, axis=1), 1)


def test_openai_api_key_alone_builds_text_embedding_3_small_with_1536_dimensions(sdks, tmp_path):
    embedder = build_embedder(Settings.from_env({"OPENAI_API_KEY": "sk-key", "CAPSULE_DATA_DIR": str(tmp_path)}))
    assert (describe(embedder).name, embedder.model_id, embedder.dim) == ("openai", "text-embedding-3-small", 1536)
    import openai

    assert (openai.clients[-1].api_key, openai.clients[-1].timeout) == ("sk-key", 15.0)
    texts = ["first text", "second, longer text", "third"]
    out = embedder.embed(texts)
    assert out.shape == (3, 1536)
    alone = embedder.embed([texts[0]])[0]
    assert out[0] @ alone > 0.999 > out[2] @ alone  # the provider answers in any order; ours is put back


def test_the_project_first_store_and_health_name_the_embedder(sdks, tmp_path):
    service = build_service(Settings.from_env({"VOYAGE_API_KEY": "pa-key", "CAPSULE_DATA_DIR": str(tmp_path)}))
    first = service.store_memory("t", {"project": "app", "content": "Deploy with the blue/green switch"})
    assert first.explanation.endswith(
        " Embedder: voyage (voyage-3.5, 1024 dimensions): VOYAGE_API_KEY is set.")
    assert first.memory.model == "voyage-3.5"
    second = service.store_memory("t", {"project": "app", "content": "Roll back with the switch"})
    assert "Embedder" not in second.explanation  # said once, on the project's first store
    ingested = service.ingest("t", {"project": "docs", "text": "A runbook.", "path": "run.md"})
    assert "Embedder: voyage (voyage-3.5, 1024 dimensions)" in ingested.explanation

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
    assert body["embedder"] == {"name": "voyage", "model": "voyage-3.5", "dims": 1024,
                                "reason": "VOYAGE_API_KEY is set"}
    assert "Embedder: voyage (voyage-3.5, 1024 dimensions)" in body["explanation"]


def test_an_unreachable_provider_stores_as_pending_and_is_not_waited_on_again(sdks, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_SDK_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("FAKE_SDK_FAIL", "1")
    service = build_service(Settings.from_env({"OPENAI_API_KEY": "sk-key", "CAPSULE_DATA_DIR": str(tmp_path)}))
    first = service.store_memory("t", {"project": "app", "content": "ioredis ENOTFOUND redis.railway.internal"})
    assert first.memory.status == "pending_embedding"
    assert "No embedding could be made (text-embedding-3-small could not embed: ConnectionError" in first.explanation
    second = service.store_memory("t", {"project": "app", "content": "family=0 fixed it"})
    assert "not retried for another" in second.explanation and second.memory.status == "pending_embedding"
    assert len((tmp_path / "calls.jsonl").read_text().splitlines()) == 1  # the second did not call out
    found = service.search("t", {"project": "app", "query": "ENOTFOUND redis"})
    assert found.results[0].id == first.memory.id and "keyword only" in found.explanation


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


def test_a_named_hosted_embedder_without_its_package_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "voyageai", None)  # import voyageai fails, as when not installed
    with pytest.raises(Unavailable, match=r"pip install 'capsule-memory\[voyage\]'"):
        build_embedder(Settings(data_dir=tmp_path, embedder="voyage", voyage_api_key="pa-1"))
    with pytest.raises(InvalidInput, match="needs VOYAGE_API_KEY"):
        build_embedder(Settings(data_dir=tmp_path, embedder="voyage", voyage_api_key="  "))
