"""The deployment secret's rotation (functions/rotation.py): Secrets Manager served by moto, the
Atlas Administration API by a small fake that follows its documented calls (a service account's
token, then GET, PATCH and POST of database users), the cluster's sign-in by a fake ping."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from functions import rotation
from tests.support.moto_aws import mocked_aws

REGION = "eu-west-1"
URI = "mongodb+srv://capsule:old%2Fpass@cluster0.abcde.mongodb.net/capsule?retryWrites=true&w=majority"
GROUP = "0123456789abcdef01234567"


class FakeAtlas:
    """Database users of one project, as the Administration API keeps them."""

    def __init__(self) -> None:
        self.users: dict[str, dict[str, Any]] = {
            "capsule": {
                "username": "capsule",
                "password": "old/pass",
                "roles": [{"roleName": "readWrite", "databaseName": "capsule"}],
                "scopes": [{"name": "Cluster0", "type": "CLUSTER"}],
            }
        }
        self.calls: list[tuple[str, str]] = []
        self.token = "t-" + uuid.uuid4().hex

    def serve(self) -> tuple[ThreadingHTTPServer, str]:
        atlas = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: Any = None) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> Any:
                return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

            def _handle(self) -> None:
                atlas.calls.append((self.command, self.path))
                if self.path == "/api/oauth/token":
                    ok = self.headers.get("Authorization", "").startswith("Basic ")
                    return self._answer(200 if ok else 401, {"access_token": atlas.token, "expires_in": 3600})
                if self.headers.get("Authorization") != f"Bearer {atlas.token}":
                    return self._answer(401, {"detail": "bad token"})
                if self.headers.get("Accept") != rotation.API_VERSION:
                    return self._answer(406, {"detail": "no version"})
                base = f"/api/atlas/v2/groups/{GROUP}/databaseUsers"
                if self.command == "POST" and self.path == base:
                    body = self._body()
                    atlas.users[body["username"]] = body
                    return self._answer(201, body)
                if self.path.startswith(base + "/admin/"):
                    name = self.path.rsplit("/", 1)[1]
                    if name not in atlas.users:
                        return self._answer(404, {"errorCode": "USERNAME_NOT_FOUND"})
                    if self.command == "PATCH":
                        atlas.users[name].update(self._body())
                    return self._answer(200, {k: v for k, v in atlas.users[name].items() if k != "password"})
                return self._answer(404, {"detail": "no route"})

            do_GET = do_POST = do_PATCH = _handle

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}"

    def ping(self, uri: str) -> None:
        who = rotation.credentials(uri)
        if self.users.get(who.username, {}).get("password") != who.password:
            raise PermissionError("Authentication failed.")


@pytest.fixture
def atlas() -> Iterator[tuple[FakeAtlas, str]]:
    fake = FakeAtlas()
    server, url = fake.serve()
    yield fake, url
    server.shutdown()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with mocked_aws(monkeypatch, REGION):
        import boto3

        yield boto3.client("secretsmanager", region_name=REGION)


def _setup(client: Any, url: str) -> tuple[str, str, dict[str, str]]:
    secret = {"mongodb_uri": URI, "voyage_api_key": "vk", "openai_api_key": "", "api_keys": {"a": "h"}, "extra": 1}
    arn = client.create_secret(Name="capsule", SecretString=json.dumps(secret))["ARN"]
    admin = client.create_secret(
        Name="atlas-admin", SecretString=json.dumps({"client_id": "id", "client_secret": "s", "group_id": GROUP})
    )["ARN"]
    environ = {rotation.ADMIN_SECRET_VARIABLE: admin, rotation.ADMIN_URL_VARIABLE: url}
    return arn, admin, environ


def _current(client: Any, arn: str) -> dict[str, Any]:
    # By its stage: moto's default version does not follow AWSCURRENT when the stage moves.
    return client.get_secret_value(SecretId=arn, VersionStage="AWSCURRENT")


def _start(client: Any, arn: str) -> str:
    """What Secrets Manager does before calling the function: a new version staged AWSPENDING
    (moto's holds a copy of the current value)."""
    token = str(uuid.uuid4())
    current = _current(client, arn)["SecretString"]
    client.put_secret_value(SecretId=arn, ClientRequestToken=token, SecretString=current, VersionStages=["AWSPENDING"])
    return token


def _rotate(client: Any, arn: str, environ: dict[str, str], ping: Any) -> str:
    token = _start(client, arn)
    steps = rotation.rotation(environ, secrets=client, ping=ping)
    for step in ("createSecret", "setSecret", "testSecret", "finishSecret"):
        steps.run(step, arn, token)
    return token


def test_rotation_alternates_users_and_keeps_the_other_keys(aws: Any, atlas: tuple[FakeAtlas, str]) -> None:
    fake, url = atlas
    arn, _, environ = _setup(aws, url)
    token = _rotate(aws, arn, environ, fake.ping)

    value = json.loads(_current(aws, arn)["SecretString"])
    assert _current(aws, arn)["VersionId"] == token
    assert {k: v for k, v in value.items() if k != "mongodb_uri"} == {
        "voyage_api_key": "vk",
        "openai_api_key": "",
        "api_keys": {"a": "h"},
        "extra": 1,
    }
    new = rotation.credentials(value["mongodb_uri"])
    assert new.username == "capsule_clone" and len(new.password) == rotation.PASSWORD_LENGTH
    assert value["mongodb_uri"].endswith("@cluster0.abcde.mongodb.net/capsule?retryWrites=true&w=majority")
    # The clone was made with the first user's roles and scopes; the first user still signs in.
    clone = fake.users["capsule_clone"]
    assert clone["roles"] == fake.users["capsule"]["roles"] and clone["scopes"] == fake.users["capsule"]["scopes"]
    fake.ping(URI)

    # The next rotation gives the first user a new password and points back at it.
    _rotate(aws, arn, environ, fake.ping)
    again = rotation.credentials(json.loads(_current(aws, arn)["SecretString"])["mongodb_uri"])
    assert again.username == "capsule" and again.password not in ("old/pass", new.password)
    assert fake.users["capsule"]["password"] == again.password
    assert fake.users["capsule_clone"]["password"] == new.password  # untouched: still valid for warm containers
    assert ("POST", f"/api/atlas/v2/groups/{GROUP}/databaseUsers") in fake.calls


def test_steps_called_again_change_nothing(aws: Any, atlas: tuple[FakeAtlas, str]) -> None:
    fake, url = atlas
    arn, _, environ = _setup(aws, url)
    token = _start(aws, arn)
    steps = rotation.rotation(environ, secrets=aws, ping=fake.ping)
    steps.run("createSecret", arn, token)
    pending = aws.get_secret_value(SecretId=arn, VersionId=token)["SecretString"]
    steps.run("createSecret", arn, token)  # Secrets Manager retries a step that timed out
    assert aws.get_secret_value(SecretId=arn, VersionId=token)["SecretString"] == pending
    for step in ("setSecret", "testSecret", "finishSecret"):
        steps.run(step, arn, token)
    steps.run("finishSecret", arn, token)  # AWSCURRENT already: nothing to do
    assert _current(aws, arn)["VersionId"] == token


def test_a_failed_sign_in_keeps_the_current_version(aws: Any, atlas: tuple[FakeAtlas, str]) -> None:
    fake, url = atlas
    arn, _, environ = _setup(aws, url)
    before = _current(aws, arn)["VersionId"]
    token = _start(aws, arn)
    steps = rotation.Rotation(aws, rotation.rotation(environ, secrets=aws)._admin, fake.ping, test_wait_s=0)
    steps.run("createSecret", arn, token)
    # setSecret never ran: the clone does not exist, so it cannot sign in.
    with pytest.raises(rotation.RotationError, match="cannot sign in"):
        steps.run("testSecret", arn, token)
    assert _current(aws, arn)["VersionId"] == before


def test_refusals_name_what_is_missing(aws: Any, atlas: tuple[FakeAtlas, str]) -> None:
    fake, url = atlas
    arn, admin, environ = _setup(aws, url)
    steps = rotation.rotation(environ, secrets=aws, ping=fake.ping)
    with pytest.raises(rotation.RotationError, match="not being rotated"):
        steps.run("createSecret", arn, str(uuid.uuid4()))
    with pytest.raises(rotation.RotationError, match="unknown rotation step"):
        steps.run("dropSecret", arn, _start(aws, arn))

    aws.put_secret_value(SecretId=admin, SecretString=json.dumps({"client_id": "id"}))
    token = _start(aws, arn)
    steps.run("createSecret", arn, token)
    with pytest.raises(rotation.RotationError, match="lacks client_secret, group_id"):
        steps.run("setSecret", arn, token)

    aws.put_secret_value(SecretId=arn, SecretString=json.dumps({"mongodb_uri": "mongodb+srv://cluster0.x.net/"}))
    with pytest.raises(rotation.RotationError, match="no user and password"):
        steps.run("createSecret", arn, _start(aws, arn))


def test_atlas_refusal_is_named(aws: Any, atlas: tuple[FakeAtlas, str]) -> None:
    fake, url = atlas
    arn, _, environ = _setup(aws, url)
    token = _start(aws, arn)
    steps = rotation.rotation(environ, secrets=aws, ping=fake.ping)
    steps.run("createSecret", arn, token)
    del fake.users["capsule"]  # the user in the URI was removed in Atlas
    with pytest.raises(rotation.RotationError, match="no database user 'capsule'"):
        steps.run("setSecret", arn, token)


@pytest.mark.parametrize(
    ("uri", "user"),
    [
        ("mongodb://a%40b:p%3Aq@h1:27017,h2:27017/db?replicaSet=rs", "a@b"),
        ("mongodb+srv://u_clone:x@c.net/", "u_clone"),
    ],
)
def test_uri_credentials_round_trip(uri: str, user: str) -> None:
    got = rotation.credentials(uri)
    assert got.username == user
    swapped = rotation.with_credentials(uri, rotation.Credentials(rotation.other_user(user), "n/w:@"))
    assert rotation.credentials(swapped) == rotation.Credentials(rotation.other_user(user), "n/w:@")
    assert swapped.split("@")[-1] == uri.split("@")[-1]
