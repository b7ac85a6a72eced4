"""Atlas's AWS IAM authentication (issue 34): with CAPSULE_MONGODB_AUTH=aws the client signs in with
MONGODB-AWS as the function's role, and a URI that carries a user or password is refused."""

from __future__ import annotations

import pytest

pytest.importorskip("pymongo")

from capsule.core.errors import Unavailable  # noqa: E402
from capsule.store.mongo_client import AUTH_VARIABLE, auth_options, drop_clients, shared_client  # noqa: E402

URI = "mongodb+srv://cluster0-pl-0.abcde.mongodb.net/?retryWrites=true"
LOCAL = "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=100"  # no server: the client connects lazily
AWS = {AUTH_VARIABLE: "aws"}


def test_without_the_setting_the_uri_signs_in_as_it_says():
    assert auth_options("mongodb://user:pw@host/", {}) == {}
    assert auth_options("mongodb://user:pw@host/", {AUTH_VARIABLE: "uri"}) == {}


def test_aws_adds_the_mechanism_unless_the_uri_names_it():
    assert auth_options(URI, AWS) == {"authMechanism": "MONGODB-AWS", "authSource": "$external"}
    named = URI + "&authMechanism=MONGODB-AWS&authSource=%24external"
    assert auth_options(named, AWS) == {}


@pytest.mark.parametrize(
    "uri, says",
    [
        ("mongodb+srv://capsule:hunter2@cluster0.abcde.mongodb.net/", "no user or password"),
        ("mongodb+srv://AKIAEXAMPLE@cluster0.abcde.mongodb.net/", "no user or password"),
        (URI + "&authMechanism=SCRAM-SHA-256", "another authMechanism"),
    ],
)
def test_aws_refuses_a_uri_with_credentials_or_another_mechanism(uri, says):
    with pytest.raises(Unavailable, match=says):
        auth_options(uri, AWS)


def test_an_unknown_setting_is_refused():
    with pytest.raises(Unavailable, match=AUTH_VARIABLE):
        auth_options(URI, {AUTH_VARIABLE: "iam"})


def test_the_shared_client_signs_in_with_the_lambda_roles_credentials(monkeypatch):
    pytest.importorskip("pymongo_auth_aws", reason="the 'mongo' extra's pymongo-auth-aws")
    from pymongo_auth_aws.auth import aws_temp_credentials

    monkeypatch.setenv(AUTH_VARIABLE, "aws")
    # What the Lambda runtime sets for the execution role's session.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session")
    try:
        credentials = shared_client(LOCAL).options.pool_options._credentials
        assert (credentials.mechanism, credentials.source) == ("MONGODB-AWS", "$external")
        assert credentials.username is None and credentials.password is None
    finally:
        drop_clients()
    signing = aws_temp_credentials()
    assert (signing.username, signing.password, signing.token) == ("ASIAEXAMPLE", "secret", "session")
