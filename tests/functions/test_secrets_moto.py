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


def test_a_rotated_secret_is_used_once_its_max_age_has_passed(client, monkeypatch):
    """A warm container built its service from the secret: after a rotation it builds it anew with
    the new values once Powertools' copy has aged out; unchanged values keep the service, and a
    Secrets Manager that cannot answer leaves the service in hand serving."""
    import time

    import functions.app as app
    import functions.secrets as secrets

    arn = client.create_secret(Name="rotating", SecretString=json.dumps({"mongodb_uri": "mongodb://one/"}))["ARN"]
    monkeypatch.setattr(secrets, "_PROVIDER", None)  # made in moto's world, dropped after
    monkeypatch.setattr(app, "_service", None)
    monkeypatch.setattr(app, "_from_secret", None)
    monkeypatch.setenv("CAPSULE_SECRET_ARN", arn)
    monkeypatch.setenv("CAPSULE_STORE", "mongo")
    monkeypatch.setenv("POWERTOOLS_PARAMETERS_MAX_AGE", "1")
    built: list[str] = []

    def build(settings):
        built.append(settings.mongodb_uri.get_secret_value())
        return object()

    monkeypatch.setattr(app, "build_service", build)
    first = app.service()
    client.put_secret_value(SecretId=arn, SecretString=json.dumps({"mongodb_uri": "mongodb://two/"}))
    assert app.service() is first and built == ["mongodb://one/"]  # within the max age: not asked
    time.sleep(1.1)
    second = app.service()
    assert second is not first and built == ["mongodb://one/", "mongodb://two/"]
    time.sleep(1.1)
    assert app.service() is second and len(built) == 2  # read again, unchanged: the same service
    client.delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)
    time.sleep(1.1)
    assert app.service() is second and len(built) == 2
