"""Check digits and decoders that tell a real value from a look-alike. Pure functions."""

from __future__ import annotations

import base64
import binascii
import json
import math
import zlib

# IBAN lengths by country (SWIFT IBAN registry); a country not listed is not an IBAN.
IBAN_LENGTHS = {
    "AD": 24,
    "AE": 23,
    "AL": 28,
    "AT": 20,
    "AZ": 28,
    "BA": 20,
    "BE": 16,
    "BG": 22,
    "BH": 22,
    "BR": 29,
    "CH": 21,
    "CR": 22,
    "CY": 28,
    "CZ": 24,
    "DE": 22,
    "DK": 18,
    "DO": 28,
    "EE": 20,
    "EG": 29,
    "ES": 24,
    "FI": 18,
    "FO": 18,
    "FR": 27,
    "GB": 22,
    "GE": 22,
    "GI": 23,
    "GL": 18,
    "GR": 27,
    "GT": 28,
    "HR": 21,
    "HU": 28,
    "IE": 22,
    "IL": 23,
    "IQ": 23,
    "IS": 26,
    "IT": 27,
    "JO": 30,
    "KW": 30,
    "KZ": 20,
    "LB": 28,
    "LI": 21,
    "LT": 20,
    "LU": 20,
    "LV": 21,
    "MC": 27,
    "MD": 24,
    "ME": 22,
    "MK": 19,
    "MR": 27,
    "MT": 31,
    "MU": 30,
    "NL": 18,
    "NO": 15,
    "PK": 24,
    "PL": 28,
    "PS": 29,
    "PT": 25,
    "QA": 29,
    "RO": 24,
    "RS": 22,
    "SA": 24,
    "SC": 31,
    "SE": 24,
    "SI": 19,
    "SK": 24,
    "SM": 27,
    "TN": 24,
    "TR": 26,
    "UA": 29,
    "VA": 22,
    "VG": 24,
    "XK": 20,
}


def luhn_ok(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def card_prefix_ok(digits: str) -> bool:
    """An issuer range a payment network uses (Visa, Mastercard, Amex, Discover, JCB, Diners,
    UnionPay, Maestro): a Luhn-valid 16-digit order number rarely starts with one of these *and*
    has a length that network issues."""
    n, two, four = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16
    if two in (34, 37):
        return n == 15
    if four == 6011 or two == 65 or 644 <= int(digits[:3]) <= 649:
        return n in (16, 19)
    if 3528 <= four <= 3589:
        return 16 <= n <= 19
    if two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305:
        return n in (14, 16, 19)
    if two == 62:
        return 16 <= n <= 19
    if two in (50, 56, 57, 58) or digits[0] == "6":
        return 12 <= n <= 19
    return False


def iban_ok(compact: str) -> bool:
    """ISO 13616: the country's length and mod-97 of the rearranged number is 1."""
    if IBAN_LENGTHS.get(compact[:2]) != len(compact):
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1


def b64url_json(part: str) -> object | None:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        return json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


def jwt_header_ok(part: str) -> bool:
    header = b64url_json(part)
    return isinstance(header, dict) and isinstance(header.get("alg"), str)


def mixed_case_and_digits(value: str) -> bool:
    """A generated key has upper, lower and digits; words and kebab-case names do not."""
    return any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value)


# --- secrets: what tells a generated credential from a placeholder, a name or a reference ---------

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Words documentation and templates put where a credential goes; a value holding one is not a secret.
PLACEHOLDER_WORDS = (
    "example",
    "xxxx",
    "your",
    "changeme",
    "change_me",
    "change-me",
    "placeholder",
    "dummy",
    "redacted",
    "sample",
    "replace",
    "insert",
    "fixme",
    "todo",
    "notreal",
    "not_real",
    "abcdefgh",
    "12345678",
    "01234567",
    "...",
    "***",
    "•",
    "<",
    ">",
    "${",
    "{{",
    "$(",
    "%(",
)
# Whole values that stand for a password in docs and connection-string templates.
PLACEHOLDER_VALUES = frozenset(
    (
        "password",
        "passwd",
        "pass",
        "pw",
        "pwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "key",
        "user",
        "username",
        "changeme",
        "admin",
        "root",
        "test",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "empty",
        "default",
        "foo",
        "bar",
        "foobar",
        "mypassword",
        "mysecret",
        "secretpassword",
        "supersecret",
        "letmein",
        "qwerty",
        "p@ssw0rd",
        "p@ssword",
        "passw0rd",
        "hunter2",
        "guest",
        "postgres",
        "mysql",
        "redis",
        "rabbitmq",
        "mongo",
    )
)


def shannon(value: str) -> float:
    """Bits per character of ``value``'s own character distribution."""
    if not value:
        return 0.0
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def char_classes(value: str) -> int:
    lower = upper = digit = other = 0
    for c in value:
        if c.islower():
            lower = 1
        elif c.isupper():
            upper = 1
        elif c.isdigit():
            digit = 1
        else:
            other = 1
    return lower + upper + digit + other


def placeholder(value: str) -> bool:
    """A documentation or template value: ``<your-token-here>``, ``${VAR}``, ``xxxx``, ``changeme``,
    AWS's ``...EXAMPLE`` keys, a run of one character."""
    low = value.lower()
    if low in PLACEHOLDER_VALUES or any(word in low for word in PLACEHOLDER_WORDS):
        return True
    return bool(value) and max(value.count(c) for c in set(value)) > len(value) / 2


def random_enough(body: str, *, bits: float = 3.0, classes: int = 2) -> bool:
    """A generated value: not a placeholder, several character classes, and close to the entropy a
    random string of its length has (a short one cannot reach ``bits``, so the bar scales)."""
    if placeholder(body) or char_classes(body) < classes:
        return False
    return shannon(body) >= min(bits, 0.8 * math.log2(max(len(body), 2)))


def github_checksum_ok(token: str) -> bool:
    """GitHub's token format (2021): prefix, 30 random base62 characters and a 6-character base62
    CRC32 of them; either way of computing it (random part, or prefix and random part) is taken."""
    prefix, _, body = token.partition("_")
    if len(body) != 36:
        return False
    random_part, check = body[:30], body[30:]
    return check in (_base62(zlib.crc32(random_part.encode())), _base62(zlib.crc32(f"{prefix}_{random_part}".encode())))


def _base62(number: int) -> str:
    out = ""
    while number:
        number, digit = divmod(number, 62)
        out = _BASE62[digit] + out
    return out.rjust(6, "0")


def github_checksum(prefix: str, random_part: str) -> str:
    """The token GitHub would issue for ``random_part`` (tests build format-valid fakes with it)."""
    return f"{prefix}_{random_part}{_base62(zlib.crc32(random_part.encode()))}"


def basic_auth_ok(value: str) -> bool:
    """``Authorization: Basic <base64 of user:password>`` with a password that is not a placeholder."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return False
    user, sep, password = raw.partition(":")
    return bool(sep and password) and not placeholder(password) and password.isprintable()
