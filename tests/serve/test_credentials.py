"""functions.credentials: files mode 0600, API keys kept only as hashes."""

import stat

import pytest

from capsule.core.errors import Conflict, InvalidInput, NotFound
from functions.auth import key_hash
from functions.credentials import Credentials


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_token_is_made_once_with_mode_0600(tmp_path):
    creds = Credentials(tmp_path)
    token, created = creds.ensure_token()
    again, created_again = creds.ensure_token()
    assert created and not created_again and token == again and len(token) >= 40
    assert mode(creds.token_path) == 0o600
    assert creds.bearers()[key_hash(token)].tenant == "local"


def test_api_keys_are_stored_hashed_and_revocable(tmp_path):
    creds = Credentials(tmp_path)
    key = creds.create_key("ci", "team-a")
    text = (tmp_path / "api-keys.json").read_text()
    assert key not in text and key_hash(key) in text
    assert mode(tmp_path / "api-keys.json") == 0o600
    assert creds.bearers()[key_hash(key)].tenant == "team-a"
    assert [k["name"] for k in creds.list_keys()] == ["ci"]
    with pytest.raises(Conflict):
        creds.create_key("ci")
    creds.revoke_key("ci")
    assert key_hash(key) not in creds.bearers()
    with pytest.raises(NotFound):
        creds.revoke_key("ci")


def test_a_second_reader_sees_new_keys(tmp_path):
    server_side = Credentials(tmp_path)
    assert server_side.bearers() == {}
    key = Credentials(tmp_path).create_key("late")
    assert key_hash(key) in server_side.bearers()


def test_the_bearers_are_read_again_only_when_a_file_changes(tmp_path):
    server_side = Credentials(tmp_path)
    token, _ = server_side.ensure_token()
    first = server_side.bearers()
    assert server_side.bearers() is first  # nothing changed: the same mapping, not one made per request
    other = Credentials(tmp_path)
    key = other.create_key("late")
    assert key_hash(key) in server_side.bearers()
    (tmp_path / "gateway-token").write_text("a-new-token\n")  # rewritten in place (same inode): its size tells
    assert key_hash("a-new-token") in server_side.bearers() and key_hash(token) not in server_side.bearers()
    other.revoke_key("late")
    assert key_hash(key) not in server_side.bearers()


@pytest.mark.parametrize("name", ["", "-x", "a b", "x" * 65, "a/b"])
def test_bad_key_names_are_refused(tmp_path, name):
    with pytest.raises(InvalidInput):
        Credentials(tmp_path).create_key(name)
    assert not (tmp_path / "api-keys.json").exists()


def test_sigv4_keys(tmp_path):
    creds = Credentials(tmp_path)
    creds.add_sigv4("AKIDEXAMPLE1234567", "s" * 40, "arn:aws:iam::1:user/x")
    assert mode(tmp_path / "sigv4-keys.json") == 0o600
    assert creds.sigv4_key("AKIDEXAMPLE1234567").tenant == "arn:aws:iam::1:user/x"
    assert creds.sigv4_key("AKIDOTHER00000000") is None
    with pytest.raises(InvalidInput):
        creds.add_sigv4("lowercase", "s" * 40, "t")
    with pytest.raises(InvalidInput):
        creds.add_sigv4("AKIDEXAMPLE7654321", "short", "t")
    creds.remove_sigv4("AKIDEXAMPLE1234567")
    assert creds.list_sigv4() == []


def test_a_scoped_key_keeps_its_scope_and_a_bad_scope_makes_no_key(tmp_path):
    creds = Credentials(tmp_path)
    key = creds.create_key("bot", "team-a", {"access": "read", "projects": ["acme/*"]})
    assert creds.bearers()[key_hash(key)].scope == {"access": "read", "projects": ["acme/*"]}
    assert creds.list_keys()[0]["scope"] == {"access": "read", "projects": ["acme/*"]}
    plain = creds.create_key("plain", "team-a", {})
    assert creds.bearers()[key_hash(plain)].scope is None and "scope" not in creds.list_keys()[1]
    for scope, field in (
        ({"access": "owner"}, "scope.access"),
        ({"projects": ["a["]}, "scope.projects"),
        ({"subject": ["x"]}, "scope.subject"),
    ):
        with pytest.raises(InvalidInput) as refused:
            creds.create_key("bad", "team-a", scope)
        assert refused.value.field == field
    assert [k["name"] for k in creds.list_keys()] == ["bot", "plain"]
