"""The deployment's secret read from a real Secrets Manager API (moto's, in-process): the
JSON it holds fills the settings, a missing secret is a 503 naming the cause, and a value
that is not a JSON object is refused. (tests/functions/test_secrets.py stubs botocore.)"""

from __future__ import annotations

import json

import pytest

from capsule.core.errors import Unavailable
from functions.secrets import fetch_secret, load_settings
from tests.support.moto_aws import mocked_aws

pytest.importorskip("moto", reason="moto is in the 'dev' extra")
boto3 = pytest.importorskip("boto3")
REGION = "eu-west-1"


@pytest.fixture
def client(monkeypatch):
    with mocked_aws(monkeypatch, REGION):
        yield boto3.client("secretsmanager", region_name=REGION)


def test_the_secret_fills_the_settings(client):
    arn = client.create_secret(
        Name="capsule",
        SecretString=json.dumps(
            {"mongodb_uri": "mongodb+srv://u:p@cluster/", "voyage_api_key": "vk", "openai_api_key": "", "api_keys": {}}
        ),
    )["ARN"]
    settings = load_settings(
        {"CAPSULE_SECRET_ARN": arn, "CAPSULE_STORE": "mongo"},
        fetch=lambda a: fetch_secret(a, boto3_client=client, max_age_s=1),
    )
    assert settings.mongodb_uri.get_secret_value() == "mongodb+srv://u:p@cluster/"
    assert settings.voyage_api_key.get_secret_value() == "vk"


def test_a_missing_secret_is_unavailable_with_the_cause(client):
    arn = f"arn:aws:secretsmanager:{REGION}:123456789012:secret:gone-AbCdEf"
    with pytest.raises(Unavailable, match="cannot read the deployment's secret"):
        fetch_secret(arn, boto3_client=client, max_age_s=1)


def test_a_secret_that_is_not_a_json_object_is_refused(client):
    arn = client.create_secret(Name="plain", SecretString="just text")["ARN"]
    with pytest.raises(Unavailable, match="not a JSON object"):
        fetch_secret(arn, boto3_client=client, max_age_s=1)
    listed = client.create_secret(Name="listed", SecretString="[1, 2]")["ARN"]
    with pytest.raises(Unavailable, match="not a JSON object"):
        fetch_secret(listed, boto3_client=client, max_age_s=1)
