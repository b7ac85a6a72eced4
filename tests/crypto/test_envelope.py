"""The envelope and the wrappers, as pure parts: a token names its key and version, opens only
with its key and in its place, and a damaged one is refused, never half-read."""

from __future__ import annotations

import base64
import os
import stat

import pytest

from capsule.core.errors import InvalidInput, KeyRefused, KeyUnavailable
from capsule.crypto import envelope
from capsule.crypto.keys import DataKey, keyed_hash
from capsule.crypto.wrappers import CustomerKey, LocalKeyFile
from capsule.search import terms

KEY = os.urandom(32)


def test_a_token_names_its_key_and_version_and_opens_in_its_place_only():
    token = envelope.seal(KEY, b"the secret", aad=b"t1\x00m1\x00content", kid="ab12cd34", version=3)
    kid, version, blob = envelope.parse(token)
    assert (kid, version) == ("ab12cd34", 3) and b"the secret" not in blob
    assert envelope.open_token(KEY, token, aad=b"t1\x00m1\x00content") == b"the secret"
    for wrong_place in (b"t2\x00m1\x00content", b"t1\x00m2\x00content", b"t1\x00m1\x00meta"):
        with pytest.raises(envelope.EnvelopeError):
            envelope.open_token(KEY, token, aad=wrong_place)
    with pytest.raises(envelope.EnvelopeError):
        envelope.open_token(os.urandom(32), token, aad=b"t1\x00m1\x00content")
    relabelled = token.replace(".3.", ".4.", 1)  # the version is authenticated too
    with pytest.raises(envelope.EnvelopeError):
        envelope.open_token(KEY, relabelled, aad=b"t1\x00m1\x00content")


def test_a_damaged_token_is_refused():
    token = envelope.seal(KEY, b"x" * 40, aad=b"a", kid="k", version=1)
    body = bytearray(base64.urlsafe_b64decode(token.rsplit(".", 1)[1]))
    body[-1] ^= 1
    damaged = token.rsplit(".", 1)[0] + "." + base64.urlsafe_b64encode(bytes(body)).decode()
    with pytest.raises(envelope.EnvelopeError):
        envelope.open_token(KEY, damaged, aad=b"a")
    assert not envelope.is_sealed("cme1.k.1.not base64!") and not envelope.is_sealed("plain text")


def test_keyed_term_hashes_differ_from_the_plain_ones_and_by_key():
    key = DataKey("k", 1, KEY).derived(b"terms")
    other = DataKey("k", 2, os.urandom(32)).derived(b"terms")
    assert keyed_hash(key, "ledger") != terms.term_hash("ledger")
    assert keyed_hash(key, "ledger") != keyed_hash(other, "ledger")
    assert 0 <= keyed_hash(key, "ledger") < 2**63


def test_the_key_file_is_made_once_0600_and_a_damaged_one_is_named(tmp_path):
    path = tmp_path / "keys" / "capsule.key"
    first = LocalKeyFile(path)
    assert not path.exists()  # made on first use
    wrapped = first.wrap(KEY, "t1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert LocalKeyFile(path).unwrap(wrapped, "t1") == KEY
    with pytest.raises(KeyUnavailable, match="does not open"):
        LocalKeyFile(path).unwrap(wrapped, "t2")  # bound to its tenant
    path.write_text("short\n")
    with pytest.raises(KeyUnavailable, match=str(path)):
        LocalKeyFile(path).wrap(KEY, "t1")


def test_a_customer_key_comes_from_its_header_and_refuses_to_open_anothers_key():
    mine = CustomerKey.from_header(base64.b64encode(os.urandom(32)).decode())
    other = CustomerKey.from_header(base64.b64encode(os.urandom(32)).decode())
    with pytest.raises(KeyRefused, match="X-Capsule-BYOK"):
        other.unwrap(mine.wrap(KEY, "t1"), "t1")
    for bad in ("", "not base64", base64.b64encode(b"16 bytes only!!!").decode()):
        with pytest.raises(InvalidInput) as refused:
            CustomerKey.from_header(bad)
        assert refused.value.field == "X-Capsule-BYOK"
