"""Data keys wrapped by AWS KMS (hosted), against botocore's own Stubber (never the network):
the calls the library makes are exactly GenerateDataKey / Decrypt with the tenant as encryption
context, a refusal or an unreachable KMS is a 503 naming KMS and the key, and a deployment with no
KMS key refuses to store what must be sealed rather than storing it in the clear."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest

from capsule.config import Settings
from capsule.core.errors import KeyUnavailable
from capsule.crypto.wrappers import KmsWrapper, NoKeys
from capsule.embedders import HashingEmbedder
from capsule.sealing.setup import sealed, wrapper_for
from capsule.service.memory_service import MemoryService

boto3 = pytest.importorskip("boto3")
mongomock = pytest.importorskip("mongomock")
from botocore.config import Config  # noqa: E402
from botocore.stub import ANY, Stubber  # noqa: E402

ARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
DATA_KEY = os.urandom(32)
WRAPPED = b"kms-wrapped:" + os.urandom(16)
TEXT = "ring petronella.oakhurst@fenwick-mills.co.uk about the plinthwork quote"


def kms_client(**config):
    return boto3.client(
        "kms",
        region_name="eu-west-1",
        aws_access_key_id="x",
        aws_secret_access_key="y",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=1),
        **config,
    )


def mongo_service(db, client) -> MemoryService:
    from capsule.store.mongo import MongoStore

    store = MongoStore(db, transactions=False)
    store.migrate()
    return MemoryService(sealed(store, KmsWrapper(client, ARN), clock=lambda: datetime.now(UTC)), HashingEmbedder())


def test_a_data_key_is_made_once_by_kms_and_opened_by_kms_in_another_process():
    db = mongomock.MongoClient().get_database("kms")
    maker = kms_client()
    with Stubber(maker) as stub:
        stub.add_response(
            "generate_data_key",
            {"CiphertextBlob": WRAPPED, "Plaintext": DATA_KEY, "KeyId": ARN},
            {"KeyId": ARN, "KeySpec": "AES_256", "EncryptionContext": {"tenant": "t1"}},
        )
        first = mongo_service(db, maker)
        memory_id = first.store_memory("t1", {"project": "p", "content": TEXT}).memory.id
        first.store_memory("t1", {"project": "p", "content": TEXT + " again"})  # the key is held: no call
        stub.assert_no_pending_responses()
    raw = db["memories"].find_one({"id": memory_id})
    assert raw["content"].startswith("cme1.") and "petronella" not in str(raw)
    assert db["data_keys"].find_one({"tenant": "t1"})["wrapped_by"] == f"kms:{ARN}"

    opener = kms_client()
    with Stubber(opener) as stub:
        stub.add_response(
            "decrypt",
            {"Plaintext": DATA_KEY, "KeyId": ARN},
            {"KeyId": ARN, "CiphertextBlob": WRAPPED, "EncryptionContext": {"tenant": "t1"}},
        )
        second = mongo_service(db, opener)
        assert second.get("t1", memory_id).memory.content == TEXT
        hits = second.search("t1", {"project": "p", "query": "plinthwork", "mode": "bm25"}).results
        assert hits[0].content.startswith(TEXT)
        stub.assert_no_pending_responses()


def test_a_kms_refusal_is_a_503_naming_kms_and_the_key():
    client = kms_client()
    with Stubber(client) as stub:
        stub.add_client_error(
            "generate_data_key",
            service_error_code="AccessDeniedException",
            service_message="not allowed",
            http_status_code=400,
            expected_params={"KeyId": ARN, "KeySpec": "AES_256", "EncryptionContext": ANY},
        )
        svc = mongo_service(mongomock.MongoClient().get_database("kms"), client)
        with pytest.raises(KeyUnavailable) as refused:
            svc.store_memory("t1", {"project": "p", "content": TEXT})
    assert refused.value.status == 503
    assert "AWS KMS refused GenerateDataKey" in refused.value.message and ARN in refused.value.message
    assert "AccessDeniedException" in refused.value.message
    assert svc.store.backing_store.list("t1", "p", pinned_only=False, after=None, limit=5) == []


def test_an_unreachable_kms_is_a_503_too():
    # A closed port on loopback: botocore's connection error, not a hang and not a 500.
    client = kms_client(endpoint_url="http://127.0.0.1:9")
    wrapper = KmsWrapper(client, ARN)
    with pytest.raises(KeyUnavailable, match="could not be reached for GenerateDataKey"):
        wrapper.new_data_key("t1")


def test_without_a_kms_key_the_hosted_store_refuses_what_must_be_sealed():
    wrapper = wrapper_for(Settings(store="mongo", mongodb_uri="mongodb://h/"))
    assert isinstance(wrapper, NoKeys)
    svc = MemoryService(sealed(_mongo(), wrapper, clock=lambda: datetime.now(UTC)), HashingEmbedder())
    with pytest.raises(KeyUnavailable, match="CAPSULE_KMS_KEY_ID"):
        svc.store_memory("t1", {"project": "p", "content": TEXT})
    plain = svc.store_memory("t1", {"project": "p", "content": "nothing personal here"})  # still works
    assert svc.get("t1", plain.memory.id).memory.content == "nothing personal here"


def test_the_settings_choose_kms_when_a_key_is_configured():
    client = kms_client()
    chosen = wrapper_for(Settings(store="mongo", mongodb_uri="mongodb://h/", kms_key_id=ARN), kms_client=client)
    assert isinstance(chosen, KmsWrapper) and chosen.id == f"kms:{ARN}"
    assert Settings.from_env({"CAPSULE_KMS_KEY_ID": ARN}).kms_key_id == ARN


def _mongo():
    from capsule.store.mongo import MongoStore

    store = MongoStore(mongomock.MongoClient().get_database("nokeys"), transactions=False)
    store.migrate()
    return store
