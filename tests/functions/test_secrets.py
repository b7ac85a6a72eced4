"""The hosted settings read the deployment's secret through Powertools (a real botocore stub)."""

from __future__ import annotations

import json

import pytest

from capsule.core.errors import Unavailable
from functions.secrets import fetch_secret, load_settings

ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:capsule-AbCdEf"


def stubbed_client(response: dict | None = None, error: str | None = None):
    boto3 = pytest.importorskip("boto3")
    from botocore.stub import Stubber

    client = boto3.client("secretsmanager", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
    stubber = Stubber(client)
    if error:
        stubber.add_client_error("get_secret_value", service_error_code=error, http_status_code=400)
    else:
        stubber.add_response("get_secret_value", {"ARN": ARN, "Name": "capsule", **response}, {"SecretId": ARN})
    stubber.activate()
    return client


def test_without_a_secret_the_environment_is_used():
    def never(arn):
        raise AssertionError("no secret to read")

    settings = load_settings({"CAPSULE_STORE": "mongo", "CAPSULE_MONGODB_URI": "mongodb://h/"}, fetch=never)
    assert settings.mongodb_uri.get_secret_value() == "mongodb://h/"


def test_the_secrets_values_fill_the_settings_and_empty_ones_are_ignored():
    secret = {"mongodb_uri": "mongodb+srv://u:p@cluster/", "voyage_api_key": "vk", "openai_api_key": ""}
    env = {"CAPSULE_SECRET_ARN": ARN, "CAPSULE_STORE": "mongo", "OPENAI_API_KEY": "from-env"}
    settings = load_settings(env, fetch=lambda arn: secret if arn == ARN else {})
    assert settings.mongodb_uri.get_secret_value() == "mongodb+srv://u:p@cluster/"
    assert settings.voyage_api_key.get_secret_value() == "vk"
    assert settings.openai_api_key.get_secret_value() == "from-env"
    assert "cluster" not in repr(settings)  # secrets stay masked


def test_fetch_reads_json_through_powertools():
    client = stubbed_client({"SecretString": json.dumps({"mongodb_uri": "mongodb://x/"})})
    assert fetch_secret(ARN, boto3_client=client, max_age_s=1) == {"mongodb_uri": "mongodb://x/"}


@pytest.mark.parametrize("case", ["missing", "not-json", "not-an-object"])
def test_an_unreadable_secret_is_unavailable(case):
    if case == "missing":
        client = stubbed_client(error="ResourceNotFoundException")
    else:
        client = stubbed_client({"SecretString": "{oops" if case == "not-json" else "[1, 2]"})
    with pytest.raises(Unavailable, match="secret"):
        fetch_secret(ARN, boto3_client=client, max_age_s=1)
