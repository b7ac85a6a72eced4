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


def test_a_kms_call_fits_in_what_is_left_of_the_request(kms):
    """boto3's defaults (60 s to connect and to read, retried) would outlive the function: the
    wrapper's own clients are made for the budget the request leaves, and with too little left
    no call starts (503 before the function is killed answering nothing)."""
    from capsule.core import deadline

    key_arn = kms.create_key(Description="capsule data keys")["KeyMetadata"]["Arn"]
    wrapper = KmsWrapper(None, key_arn)
    plain, wrapped = wrapper.new_data_key("tenant-a")  # no deadline: the full budget
    with deadline.within(1.2):
        assert wrapper.unwrap(wrapped, "tenant-a") == plain
    budgets = sorted(wrapper._made)
    assert budgets[-1] == 6.0 and budgets[0] <= 1.2
    for step, client in wrapper._made.items():
        config = client.meta.config
        attempts = config.retries["total_max_attempts"]
        assert attempts * (config.connect_timeout + config.read_timeout) <= step + 1e-9
    assert wrapper._made[budgets[0]].meta.config.retries["total_max_attempts"] == 1
    with deadline.within(0.01), pytest.raises(KeyUnavailable, match="no time left in this request to ask AWS KMS"):
        wrapper.unwrap(wrapped, "tenant-a")
