"""Which credentials a remote connection sends: the URL decides unless --auth / CAPSULE_AUTH says."""

from __future__ import annotations

import pytest

from capsule.core.errors import InvalidInput, Unauthorized
from mcp_client.auth import BearerAuth, NoAuth
from mcp_client.auth_choice import bearer_for, choose_auth, is_loopback
from mcp_client.backends import Connection, make_auth
from mcp_client.client import CapsuleClient, Response

API = "https://abc123.execute-api.eu-west-1.amazonaws.com"
HOSTED = "https://memory.example.com"
LOCAL = "http://127.0.0.1:8787"


@pytest.mark.parametrize(
    "url, method, options, chosen",
    [
        (API, None, False, "sigv4"),  # execute-api host: SigV4, region from the host
        (API + "/prod", None, False, "sigv4"),
        ("https://x.execute-api.cn-north-1.amazonaws.com.cn", None, False, "sigv4"),
        (LOCAL, None, False, "apikey"),  # loopback: a key, else capsule serve's token
        ("http://localhost:8787", None, False, "apikey"),
        ("http://[::1]:8787", None, False, "apikey"),
        (HOSTED, None, False, "apikey"),  # any other host: an API key
        (HOSTED, None, True, "sigv4"),  # --region / --profile exist only for SigV4
        (LOCAL, "sigv4", False, "sigv4"),  # --auth overrides the URL ...
        (API, "apikey", False, "apikey"),
        (API, "none", False, "none"),
        (HOSTED, "auto", False, "apikey"),
        (API, "", False, "sigv4"),  # CAPSULE_AUTH="" is unset
    ],
)
def test_the_auth_choice_table(url, method, options, chosen):
    assert choose_auth(url, method, sigv4_options=options).method == chosen


def test_an_unknown_method_is_refused_with_the_nearest_name():
    with pytest.raises(InvalidInput, match=r"unknown auth method 'apikeys' \(did you mean 'apikey'\?\)"):
        choose_auth(LOCAL, "apikeys")
    with pytest.raises(InvalidInput, match="'sigv5'.*'sigv4'"):
        Connection.from_env({"CAPSULE_MEMORY_URL": LOCAL, "CAPSULE_AUTH": "sigv5"})


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("localhost", True),
        ("api.localhost", True),
        ("LOCALHOST", True),
        ("10.0.0.1", False),
        ("example.com", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback


def headers(auth):
    return auth.headers("GET", "http://h/v1/health", {"Accept": "application/json"}, b"")


def test_capsule_memory_url_alone_sends_the_local_servers_token(tmp_path):
    (tmp_path / "gateway-token").write_text("tok-123\n")
    env = {"CAPSULE_MEMORY_URL": LOCAL, "CAPSULE_DATA_DIR": str(tmp_path)}
    auth = make_auth(Connection.from_env(env), env)
    assert headers(auth)["Authorization"] == "Bearer tok-123"
    assert auth.sent == f"the token in {tmp_path / 'gateway-token'}"
    assert "tok-123" not in repr(auth)


def test_an_api_key_wins_over_the_token_on_loopback(tmp_path):
    (tmp_path / "gateway-token").write_text("tok-123\n")
    env = {"CAPSULE_MEMORY_URL": LOCAL, "CAPSULE_DATA_DIR": str(tmp_path), "CAPSULE_API_KEY": "cmk_key"}
    assert headers(make_auth(Connection.from_env(env), env))["Authorization"] == "Bearer cmk_key"
    key_file = tmp_path / "key"
    key_file.write_text("cmk_from_file\n")
    conn = Connection.from_env(env, api_key_file=str(key_file))
    assert headers(make_auth(conn, env))["Authorization"] == "Bearer cmk_from_file"


def test_the_data_dir_option_names_the_token_folder(tmp_path):
    (tmp_path / "gateway-token").write_text("tok-dir\n")
    env = {"CAPSULE_MEMORY_URL": LOCAL, "CAPSULE_DATA_DIR": str(tmp_path / "elsewhere")}
    auth = make_auth(Connection.from_env(env, data_dir=str(tmp_path)), env)
    assert headers(auth)["Authorization"] == "Bearer tok-dir"


def test_another_host_takes_the_api_key_and_never_the_token(tmp_path):
    (tmp_path / "gateway-token").write_text("tok-123\n")
    env = {"CAPSULE_MEMORY_URL": HOSTED, "CAPSULE_DATA_DIR": str(tmp_path)}
    auth = make_auth(Connection.from_env(env), env)
    with pytest.raises(Unauthorized, match="set CAPSULE_API_KEY.*--auth sigv4"):
        headers(auth)
    key_file = tmp_path / "hosted-key"
    key_file.write_text("cmk_hosted")
    env["CAPSULE_API_KEY_FILE"] = str(key_file)
    assert headers(make_auth(Connection.from_env(env), env))["Authorization"] == "Bearer cmk_hosted"


def test_a_missing_credential_fails_each_call_saying_what_to_set_then_is_picked_up(tmp_path):
    env = {"CAPSULE_MEMORY_URL": LOCAL, "CAPSULE_DATA_DIR": str(tmp_path)}
    auth = make_auth(Connection.from_env(env), env)  # opening never fails
    for _ in range(2):
        with pytest.raises(Unauthorized) as caught:
            headers(auth)
        assert "CAPSULE_API_KEY" in caught.value.message and str(tmp_path / "gateway-token") in caught.value.message
    (tmp_path / "gateway-token").write_text("made-later\n")  # capsule serve started afterwards
    assert headers(auth)["Authorization"] == "Bearer made-later"


def test_an_empty_token_file_is_a_missing_credential(tmp_path):
    (tmp_path / "gateway-token").write_text("\n")
    with pytest.raises(Unauthorized, match="token file"):
        bearer_for(LOCAL, environ={"CAPSULE_DATA_DIR": str(tmp_path)})


def test_an_execute_api_url_signs_with_sigv4_in_the_hosts_region(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE0000001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret-secret-secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    auth = make_auth(Connection.from_env({"CAPSULE_MEMORY_URL": API}), {})
    signed = headers(auth)
    assert "Credential=AKIDEXAMPLE0000001/" in signed["Authorization"]
    assert "/eu-west-1/execute-api/aws4_request" in signed["Authorization"]
    assert auth.sent == "a SigV4 signature (service execute-api, region eu-west-1)"


def test_sigv4_without_aws_credentials_says_how_to_get_them(tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    auth = make_auth(Connection(url=API))
    with pytest.raises(Unauthorized, match="no AWS credentials"):
        headers(auth)


def test_auth_none_sends_nothing():
    assert isinstance(make_auth(Connection.from_env({"CAPSULE_MEMORY_URL": API, "CAPSULE_AUTH": "none"})), NoAuth)


def test_a_refused_key_says_which_credential_was_sent(tmp_path):
    (tmp_path / "gateway-token").write_text("stale\n")
    env = {"CAPSULE_MEMORY_URL": LOCAL, "CAPSULE_DATA_DIR": str(tmp_path)}

    def send(method, url, headers, body, timeout):
        return Response(401, {}, b'{"error": {"code": "unauthorized", "message": "unknown token"}}')

    client = CapsuleClient(LOCAL, auth=make_auth(Connection.from_env(env), env), send=send)
    with pytest.raises(Unauthorized) as caught:
        client.projects()
    assert caught.value.message == (
        f"unknown token (HTTP 401); this client sent the token in {tmp_path / 'gateway-token'}"
    )
    assert "stale" not in caught.value.message


def test_bearer_auth_names_its_source_not_its_key():
    auth = BearerAuth.from_env({"CAPSULE_API_KEY": "cmk_secret"})
    assert auth.source == "the API key in CAPSULE_API_KEY" and "cmk_secret" not in repr(auth)


@pytest.mark.parametrize("url", ["ftp://example.com", "127.0.0.1:8787", "http://", "localhost"])
def test_a_url_no_retry_could_fix_is_refused_at_startup(url):
    with pytest.raises(InvalidInput, match="must be http:// or https:// with a host"):
        Connection.from_env({"CAPSULE_MEMORY_URL": url})


def test_a_backend_that_cannot_open_yet_fails_each_call_with_why_then_opens(tmp_path):
    from mcp_client.backends import RetryingOpen, open_backend

    attempts = []

    def opener():
        attempts.append(1)
        if len(attempts) < 3:
            raise Unauthorized("set CAPSULE_API_KEY")
        return type("Opened", (), {"projects": lambda self: "the projects", "close": lambda self: None})()

    backend = RetryingOpen(opener)
    projects = backend.projects  # looking it up never fails: the call carries the reason
    for _ in range(2):
        with pytest.raises(Unauthorized, match="set CAPSULE_API_KEY"):
            projects()
    assert projects() == "the projects" and backend.projects() == "the projects" and len(attempts) == 3
    with pytest.raises(InvalidInput, match="VOYAGE_API_KEY"):  # embedded, with a settings error
        open_backend(Connection(embedder="voyage", data_dir=str(tmp_path)), {}).projects()
