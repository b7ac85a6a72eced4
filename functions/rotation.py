"""Secrets Manager's rotation of the deployment secret's database password (``-c
secret_rotation_days=N``), by alternating two Atlas database users.

Rotating one user's password in place would break every warm function still holding the old
URI until it re-reads the secret (up to ``POWERTOOLS_PARAMETERS_MAX_AGE``, 5 minutes). So each
rotation gives the *other* user a new password and points ``mongodb_uri`` at it: the user in use
keeps working until the rotation after, days later, by which time every container has moved.
The other user is ``<name>_clone`` (or the name without it), made on the first rotation with the
current user's roles and scopes, as Secrets Manager's own alternating-users templates do.

Secrets Manager calls the four steps in order with the new version's token:

- ``createSecret``: the new value under ``AWSPENDING``, every key but ``mongodb_uri`` kept as is;
- ``setSecret``: the Atlas Administration API sets that user's password (or creates the user);
- ``testSecret``: the pending URI signs in and pings (Atlas applies user changes within about a
  minute, so it is tried again until ``TEST_WAIT_S``);
- ``finishSecret``: ``AWSCURRENT`` moves to the new version.

Atlas is reached with a service account (OAuth 2.0 client credentials, Atlas's recommended way),
whose ``client_id``, ``client_secret`` and ``group_id`` (the project) are in a second secret
(``-c atlas_admin_secret_arn``), never in the one the API functions read. The Administration API
is on the public internet only, so rotation needs a route out (infra/context.py says which
networks have one). A user that signs in with its role (``-c atlas_iam_auth=true``) has no
password and nothing to rotate.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

ADMIN_SECRET_VARIABLE = "CAPSULE_ATLAS_ADMIN_SECRET_ARN"
ADMIN_URL_VARIABLE = "CAPSULE_ATLAS_ADMIN_URL"  # tests point it at a local fake
ADMIN_URL = "https://cloud.mongodb.com"
API_VERSION = "application/vnd.atlas.2023-01-01+json"  # the Administration API's dated version
CLONE_SUFFIX = "_clone"
PASSWORD_LENGTH = 32
TEST_WAIT_S = 180.0  # Atlas deploys a user change to the cluster in seconds to a minute
HTTP_TIMEOUT_S = 10.0

Ping = Callable[[str], None]


class RotationError(Exception):
    """A step cannot go on; Secrets Manager marks the rotation failed and keeps AWSCURRENT."""


# --- the URI ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str


def credentials(uri: str) -> Credentials:
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme not in ("mongodb", "mongodb+srv") or parts.username is None or parts.password is None:
        raise RotationError("mongodb_uri has no user and password to rotate (a role's sign-in has none)")
    return Credentials(urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password))


def with_credentials(uri: str, new: Credentials) -> str:
    """``uri`` signing in as ``new``; host, database and options as they were."""
    parts = urllib.parse.urlsplit(uri)
    host = parts.netloc.rpartition("@")[2]
    userinfo = f"{urllib.parse.quote(new.username, safe='')}:{urllib.parse.quote(new.password, safe='')}"
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{userinfo}@{host}"))


def other_user(username: str) -> str:
    return username.removesuffix(CLONE_SUFFIX) if username.endswith(CLONE_SUFFIX) else username + CLONE_SUFFIX


# --- Atlas's Administration API --------------------------------------------------------------


class AtlasAdmin:
    """The three database-user calls rotation makes, with a service account's bearer token."""

    def __init__(self, client_id: str, client_secret: str, group_id: str, *, base_url: str = ADMIN_URL) -> None:
        self._basic = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
        self._group = urllib.parse.quote(group_id, safe="")
        self._base = base_url.rstrip("/")
        self._token: str | None = None

    @classmethod
    def from_secret(cls, value: Mapping[str, Any], base_url: str) -> AtlasAdmin:
        missing = [key for key in ("client_id", "client_secret", "group_id") if not value.get(key)]
        if missing:
            raise RotationError(f"the Atlas admin secret lacks {', '.join(missing)}")
        return cls(value["client_id"], value["client_secret"], value["group_id"], base_url=base_url)

    def user(self, username: str) -> dict[str, Any] | None:
        return self._call("GET", self._user_path(username), missing_ok=True)

    def set_password(self, username: str, password: str) -> None:
        self._call("PATCH", self._user_path(username), {"password": password})

    def create_user(self, like: Mapping[str, Any], username: str, password: str) -> None:
        body = {
            "databaseName": "admin",
            "groupId": urllib.parse.unquote(self._group),
            "username": username,
            "password": password,
            "roles": like.get("roles", []),
            "scopes": like.get("scopes", []),
        }
        self._call("POST", f"/api/atlas/v2/groups/{self._group}/databaseUsers", body)

    def _user_path(self, username: str) -> str:
        return f"/api/atlas/v2/groups/{self._group}/databaseUsers/admin/{urllib.parse.quote(username, safe='')}"

    def _bearer(self) -> str:
        if self._token is None:
            request = urllib.request.Request(
                f"{self._base}/api/oauth/token",
                data=b"grant_type=client_credentials",
                method="POST",
                headers={
                    "Authorization": f"Basic {self._basic}",
                    "Content-Type": "application/x-www-form-urlencoded",
                    "Accept": "application/json",
                },
            )
            self._token = str(_send(request)["access_token"])
        return self._token

    def _call(self, method: str, path: str, body: Any = None, *, missing_ok: bool = False) -> Any:
        request = urllib.request.Request(
            self._base + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Authorization": f"Bearer {self._bearer()}", "Accept": API_VERSION, "Content-Type": API_VERSION},
        )
        try:
            return _send(request)
        except urllib.error.HTTPError as exc:
            if missing_ok and exc.code == 404:
                return None
            raise RotationError(f"Atlas answered {exc.code} to {method} {path}: {_detail(exc)}") from exc


def _send(request: urllib.request.Request) -> Any:
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:  # noqa: S310 (https, or a test's fake)
            text = response.read()
    except urllib.error.HTTPError:
        raise
    except (urllib.error.URLError, TimeoutError) as exc:
        raise RotationError(f"cannot reach Atlas's Administration API: {exc}") from exc
    return json.loads(text) if text else {}


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except ValueError:
        return exc.reason or ""
    return str(body.get("detail") or body.get("errorCode") or exc.reason)


# --- the four steps ---------------------------------------------------------------------------


class Rotation:
    def __init__(
        self, secrets: Any, admin: Callable[[], AtlasAdmin], ping: Ping, *, test_wait_s: float = TEST_WAIT_S
    ) -> None:
        self._secrets = secrets
        self._admin = admin  # made only by the steps that call Atlas
        self._ping = ping
        self._test_wait_s = test_wait_s

    def run(self, step: str, arn: str, token: str) -> None:
        steps = {
            "createSecret": self.create,
            "setSecret": self.set,
            "testSecret": self.test,
            "finishSecret": self.finish,
        }
        if step not in steps:
            raise RotationError(f"unknown rotation step {step!r}")
        stages = self._secrets.describe_secret(SecretId=arn).get("VersionIdsToStages", {})
        if token not in stages:
            raise RotationError(f"version {token} of the secret is not being rotated")
        if "AWSCURRENT" in stages[token]:
            return  # already finished: Secrets Manager may call a step again
        if "AWSPENDING" not in stages[token]:
            raise RotationError(f"version {token} of the secret is not AWSPENDING")
        steps[step](arn, token)

    def create(self, arn: str, token: str) -> None:
        current = self._value(arn, stage="AWSCURRENT")
        pending = self._pending(arn, token)
        if pending is not None and pending.get("mongodb_uri") != current.get("mongodb_uri"):
            return  # made by an earlier call of this step
        uri = str(current.get("mongodb_uri") or "")
        now = credentials(uri)
        password = self._secrets.get_random_password(PasswordLength=PASSWORD_LENGTH, ExcludePunctuation=True)
        new = Credentials(other_user(now.username), password["RandomPassword"])
        value = {**current, "mongodb_uri": with_credentials(uri, new)}
        self._secrets.put_secret_value(
            SecretId=arn, ClientRequestToken=token, SecretString=json.dumps(value), VersionStages=["AWSPENDING"]
        )

    def set(self, arn: str, token: str) -> None:
        current = credentials(str(self._value(arn, stage="AWSCURRENT").get("mongodb_uri") or ""))
        new = credentials(self._pending_uri(arn, token))
        admin = self._admin()
        if admin.user(new.username) is not None:
            admin.set_password(new.username, new.password)
            return
        like = admin.user(current.username)
        if like is None:
            raise RotationError(f"Atlas has no database user {current.username!r} to copy the roles of")
        admin.create_user(like, new.username, new.password)

    def test(self, arn: str, token: str) -> None:
        uri = self._pending_uri(arn, token)
        deadline = time.monotonic() + self._test_wait_s
        while True:
            try:
                self._ping(uri)
                return
            except Exception as exc:  # the driver's errors: authentication not yet deployed, or a real failure
                if time.monotonic() >= deadline:
                    raise RotationError(f"the new database user cannot sign in: {type(exc).__name__}") from exc
                time.sleep(5)

    def finish(self, arn: str, token: str) -> None:
        stages = self._secrets.describe_secret(SecretId=arn).get("VersionIdsToStages", {})
        current = next((version for version, names in stages.items() if "AWSCURRENT" in names), None)
        self._secrets.update_secret_version_stage(
            SecretId=arn, VersionStage="AWSCURRENT", MoveToVersionId=token, RemoveFromVersionId=current
        )

    def _value(self, arn: str, **where: str) -> dict[str, Any]:
        keys = {"VersionStage": where["stage"]} if "stage" in where else {"VersionId": where["version"]}
        value = json.loads(self._secrets.get_secret_value(SecretId=arn, **keys)["SecretString"])
        if not isinstance(value, dict):
            raise RotationError("the deployment's secret is not a JSON object")
        return value

    def _pending(self, arn: str, token: str) -> dict[str, Any] | None:
        try:
            return self._value(arn, version=token)
        except self._secrets.exceptions.ResourceNotFoundException:
            return None

    def _pending_uri(self, arn: str, token: str) -> str:
        pending = self._pending(arn, token)
        if pending is None:
            raise RotationError(f"version {token} of the secret has no value yet (createSecret first)")
        return str(pending.get("mongodb_uri") or "")


# --- the Lambda handler -----------------------------------------------------------------------


def _secrets_client() -> Any:
    import boto3
    from botocore.config import Config

    from .secrets import SECRETS_CLIENT

    return boto3.client("secretsmanager", config=Config(**SECRETS_CLIENT))


def _pymongo_ping(uri: str) -> None:
    from pymongo import MongoClient

    client: Any = MongoClient(uri, serverSelectionTimeoutMS=5_000, connectTimeoutMS=5_000)
    try:
        client.admin.command("ping")
    finally:
        client.close()


def rotation(environ: Mapping[str, str] | None = None, *, secrets: Any = None, ping: Ping = _pymongo_ping) -> Rotation:
    environ = os.environ if environ is None else environ
    client = secrets if secrets is not None else _secrets_client()

    def admin() -> AtlasAdmin:
        arn = environ.get(ADMIN_SECRET_VARIABLE, "")
        if not arn:
            raise RotationError(f"{ADMIN_SECRET_VARIABLE} is not set")
        value = json.loads(client.get_secret_value(SecretId=arn)["SecretString"])
        return AtlasAdmin.from_secret(value, environ.get(ADMIN_URL_VARIABLE) or ADMIN_URL)

    return Rotation(client, admin, ping)


def handler(event: dict[str, Any], context: Any) -> None:
    rotation().run(event["Step"], event["SecretId"], event["ClientRequestToken"])
