"""Tenants' data keys made, wrapped and opened by a real KMS API (moto's, in-process): the
tenant is the encryption context, so one tenant's wrapped key does not open as another's,
and an unknown key is a 503 naming KMS. (tests/crypto stub botocore.)"""

from __future__ import annotations

import pytest

from capsule.core.errors import KeyUnavailable
from capsule.crypto.wrappers import KmsWrapper
from tests.support.moto_aws import mocked_aws

pytest.importorskip("moto", reason="moto is in the 'dev' extra")
boto3 = pytest.importorskip("boto3")
REGION = "eu-west-1"


@pytest.fixture
def kms(monkeypatch):
    with mocked_aws(monkeypatch, REGION):
        yield boto3.client("kms", region_name=REGION)


def test_a_data_key_opens_for_its_tenant_only(kms):
    key_arn = kms.create_key(Description="capsule data keys")["KeyMetadata"]["Arn"]
    wrapper = KmsWrapper(kms, key_arn)
    plain, wrapped = wrapper.new_data_key("tenant-a")
    assert len(plain) == 32 and wrapped != plain
    assert wrapper.unwrap(wrapped, "tenant-a") == plain
    assert wrapper.unwrap(wrapper.wrap(plain, "tenant-a"), "tenant-a") == plain
    with pytest.raises(KeyUnavailable, match="Decrypt"):
        wrapper.unwrap(wrapped, "tenant-b")


def test_an_unknown_key_is_unavailable_naming_kms(kms):
    wrapper = KmsWrapper(kms, f"arn:aws:kms:{REGION}:123456789012:key/00000000-0000-0000-0000-000000000000")
    with pytest.raises(KeyUnavailable, match="AWS KMS refused GenerateDataKey"):
        wrapper.new_data_key("tenant-a")
