"""Find secrets and personal data in text: ``detect(text) -> [Finding]``, pure and deterministic.

Every pattern is validated beyond its shape where a check exists (Luhn and an issuer range for
card numbers, mod-97 and the country's length for IBANs, a JSON header with ``alg`` for JWTs,
mixed case and digits for OpenAI keys, a ``secret``-named assignment for AWS secret keys), so
UUIDs, git SHAs, base64 blobs, order numbers and dates are not flagged. Documentation addresses
(RFC 2606/6761: example.com, .test, .invalid, ...) are not personal data.
"""

from __future__ import annotations

import re
from collections import namedtuple

from . import checks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Iterator

SECRET_KINDS = ("aws-access-key", "aws-secret-key", "github-token", "slack-token", "openai-key",
                "private-key", "jwt", "card-number")
PII_KINDS = ("email", "phone", "iban")
# Card numbers count as secrets: PCI DSS forbids storing a full card number in clear text, so the
# default (redact) applies, not the PII default (flag).


# Named tuples and plain classes, not dataclasses: a hook keeping a write in its spool guards it,
# and dataclasses (with inspect) and typing would be most of that hook's start-up.
class Finding(namedtuple("Finding", "kind start end")):
    __slots__ = ()

    @property
    def category(self) -> str:
        return "secrets" if self.kind in SECRET_KINDS else "pii"

    def as_dict(self) -> dict:
        return {"kind": self.kind, "start": self.start, "end": self.end}


Span = tuple[int, int]
_W = r"A-Za-z0-9"

AWS_ACCESS = re.compile(rf"(?<![{_W}])(?:AKIA|ASIA)[A-Z0-9]{{16}}(?![{_W}])")
AWS_SECRET = re.compile(
    r"(?i:aws_?secret(?:_?access)?_?key|secret_?access_?key|aws_?secret)[\"']?\s*(?:[:=]|=>)\s*[\"']?"
    r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")
GITHUB = re.compile(rf"(?<![{_W}_])(?:(?:ghp|gho|ghu|ghs|ghr)_[{_W}]{{36}}|github_pat_[{_W}]{{22}}_[{_W}]{{59}})(?![{_W}_])")
SLACK = re.compile(rf"(?<![{_W}])xox[baprs]-[0-9]+-[{_W}-]{{8,}}(?![{_W}-])")
OPENAI = re.compile(rf"(?<![{_W}_-])sk-(?:proj-|svcacct-|admin-)?([{_W}_-]{{20,}})(?![{_W}_-])")
PEM = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)", re.S)
JWT = re.compile(r"(?<![A-Za-z0-9_.-])(eyJ[A-Za-z0-9_-]{8,})\.([A-Za-z0-9_-]{2,})\.([A-Za-z0-9_-]*)(?![A-Za-z0-9_.-])")
EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})@((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24})(?![A-Za-z0-9-])")
CARD = re.compile(r"(?<![\d.-])\d(?:[ -]?\d){11,18}(?![\d-])")
IBAN_START = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2})(\d{2})(?=[ A-Z0-9])")
PHONE = re.compile(
    r"(?<![\w+.-])(?:"
    r"\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){2,5}"      # international: +49 30 1234567, +1 (415) 555-0132
    r"|\(\d{3}\) ?\d{3}-\d{4}"                          # North American: (415) 555-0132
    r"|[2-9]\d{2}[-.][2-9]\d{2}[-.]\d{4}"               # 415-555-0132, same separator checked below
    r")(?![\w.-]*\d)")
DOC_DOMAINS = ("example.com", "example.org", "example.net", "example.edu")
DOC_TLDS = ("test", "example", "invalid", "localhost", "local", "internal")
NOT_PERSONAL_LOCALS = ("git",)  # git@github.com:owner/repo is a remote, not a person


def _aws_access(text: str) -> Iterator[Span]:
    return (m.span() for m in AWS_ACCESS.finditer(text))


def _aws_secret(text: str) -> Iterator[Span]:
    return (m.span(1) for m in AWS_SECRET.finditer(text))


def _github(text: str) -> Iterator[Span]:
    return (m.span() for m in GITHUB.finditer(text))


def _slack(text: str) -> Iterator[Span]:
    return (m.span() for m in SLACK.finditer(text))


def _openai(text: str) -> Iterator[Span]:
    return (m.span() for m in OPENAI.finditer(text) if checks.mixed_case_and_digits(m.group(1)))


def _pem(text: str) -> Iterator[Span]:
    return (m.span() for m in PEM.finditer(text))


def _jwt(text: str) -> Iterator[Span]:
    return (m.span() for m in JWT.finditer(text) if checks.jwt_header_ok(m.group(1)))


def _email(text: str) -> Iterator[Span]:
    for m in EMAIL.finditer(text):
        domain, local = m.group(2).lower(), m.group(1).lower()
        documentation = domain in DOC_DOMAINS or domain.endswith(tuple("." + d for d in DOC_DOMAINS))
        if documentation or domain.rsplit(".", 1)[-1] in DOC_TLDS or local in NOT_PERSONAL_LOCALS:
            continue
        yield m.span()


def _card(text: str) -> Iterator[Span]:
    for m in CARD.finditer(text):
        raw = m.group()
        if len({c for c in raw if not c.isdigit()}) > 1:
            continue  # mixed separators: a list of numbers, not one card
        digits = re.sub(r"\D", "", raw)
        if 13 <= len(digits) <= 19 and checks.card_prefix_ok(digits) and checks.luhn_ok(digits):
            yield m.span()


def _iban(text: str) -> Iterator[Span]:
    for m in IBAN_START.finditer(text):
        length = checks.IBAN_LENGTHS.get(m.group(1))
        if length is None:
            continue
        end = _iban_end(text, m.start(), length)
        if end is not None and checks.iban_ok(re.sub(r" ", "", text[m.start():end])):
            yield m.start(), end


def _iban_end(text: str, start: int, length: int) -> int | None:
    """Where an IBAN of ``length`` characters starting at ``start`` ends, single spaces allowed
    between characters (the printed form groups by four); None when the text ends first or goes
    on with more letters or digits."""
    count, i = 0, start
    while i < len(text) and count < length:
        char = text[i]
        if char.isascii() and char.isalnum():
            count += 1
        elif not (char == " " and count and i + 1 < len(text) and text[i + 1] != " "):
            return None
        i += 1
    if count < length or (i < len(text) and text[i].isascii() and text[i].isalnum()):
        return None
    return i


def _phone(text: str) -> Iterator[Span]:
    for m in PHONE.finditer(text):
        raw = m.group().rstrip(" .-")
        digits = re.sub(r"\D", "", raw)
        if not 10 <= len(digits) <= 15 or len(set(re.findall(r"[.-]", raw))) > 1:
            continue  # too short for a full number, or mixed separators (a date or a version)
        yield m.start(), m.start() + len(raw)


DETECTORS: dict[str, Callable[[str], Iterator[Span]]] = {
    "private-key": _pem, "aws-access-key": _aws_access, "aws-secret-key": _aws_secret,
    "github-token": _github, "slack-token": _slack, "openai-key": _openai, "jwt": _jwt,
    "card-number": _card, "iban": _iban, "email": _email, "phone": _phone,
}


def detect(text: str) -> list[Finding]:
    """Every finding in ``text``, in order; where two overlap, the one listed first in
    ``DETECTORS`` (a private key block holds base64 that may look like anything) wins."""
    found: list[Finding] = []
    for kind, find in DETECTORS.items():
        for start, end in find(text):
            if not any(f.start < end and start < f.end for f in found):
                found.append(Finding(kind, start, end))
    return sorted(found, key=lambda f: f.start)
