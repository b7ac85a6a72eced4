"""Find secrets and personal data in text: ``detect(text) -> [Finding]``, pure and deterministic.

Secrets: the table in :mod:`.rules` (providers' published token formats, credentials inside URLs,
values assigned to a secret's name, auth headers), private key blocks, JWTs and card numbers, all
matched by RE2 (linear in the text, whatever it holds). Every pattern is validated beyond its
shape where a check exists (entropy and character classes for a generated value, GitHub's CRC32,
Luhn and an issuer range for card numbers, mod-97 and the country's length for IBANs, a JSON header
with ``alg`` for JWTs), so UUIDs, git SHAs, hashes, base64 blobs, versions, order numbers, dates and
documentation placeholders (``<your-token-here>``, ``${VAR}``, ``xxxx``, AWS's ``...EXAMPLE`` keys)
are not flagged. Documentation addresses (RFC 2606/6761: example.com, .test, .invalid, ...) are not
personal data, nor is the user part of a URL (``scheme://user:pw@host``).

Personal data keeps the standard library's ``re``: its patterns have bounded quantifiers only
(no nested unbounded repetition), so their work per position is bounded.
"""

from __future__ import annotations

import bisect
import re
from collections import namedtuple

import re2

from . import checks
from .rules import SECRET_KINDS, Rule, compiled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

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

EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})@((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24})(?![A-Za-z0-9-])"
)
CARD = re.compile(r"(?<![\d.-])\d(?:[ -]?\d){11,18}(?![\d-])")
IBAN_START = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2})(\d{2})(?=[ A-Z0-9])")
PHONE = re.compile(
    r"(?<![\w+.-])(?:"
    r"\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){2,5}"  # international: +49 30 1234567, +1 (415) 555-0132
    r"|\(\d{3}\) ?\d{3}-\d{4}"  # North American: (415) 555-0132
    r"|[2-9]\d{2}[-.][2-9]\d{2}[-.]\d{4}"  # 415-555-0132, same separator checked below
    r")(?![\w.-]*\d)"
)
DOC_DOMAINS = ("example.com", "example.org", "example.net", "example.edu")
DOC_TLDS = ("test", "example", "invalid", "localhost", "local", "internal")
NOT_PERSONAL_LOCALS = ("git",)  # git@github.com:owner/repo is a remote, not a person


# Gates (issue 32: an ingest guards its text whole and then each chunk): what every match of a
# detector contains, found by one RE2 scan (linear, a DFA, far faster than the detector's ``re``
# pass with its lookarounds); a text without it is skipped. Each gate is its detector's pattern, or
# the first part of it, without the lookarounds, so it matches wherever the detector could: no
# finding is lost. RE2's ``\d`` is ASCII only, so a text with other characters is never skipped.
CARD_GATE = re2.compile(r"[0-9](?:[ -]?[0-9]){11}")
IBAN_GATE = re2.compile(r"[A-Z]{2}[0-9]{2}[ A-Z0-9]")
PHONE_GATE = re2.compile(r"\+[1-9]|\([0-9]{3}\)|[2-9][0-9]{2}[-.][2-9][0-9]{2}[-.][0-9]{4}")


def _gated(gate: re2._Regexp, text: str) -> bool:
    """Whether a detector must scan ``text``: it is not ASCII, or its ``gate`` matches."""
    return not text.isascii() or gate.search(_subject(text)) is not None


def _email(text: str) -> Iterator[Span]:
    if "@" not in text:
        return
    for m in EMAIL.finditer(text):
        domain, local = m.group(2).lower(), m.group(1).lower()
        documentation = domain in DOC_DOMAINS or domain.endswith(tuple("." + d for d in DOC_DOMAINS))
        if documentation or domain.rsplit(".", 1)[-1] in DOC_TLDS or local in NOT_PERSONAL_LOCALS:
            continue
        if m.start() and text[m.start() - 1] in ":/" and _in_url_authority(text, m.start()):
            continue
        yield m.span()


def _card(text: str) -> Iterator[Span]:
    if not _gated(CARD_GATE, text):
        return
    for m in CARD.finditer(text):
        raw = m.group()
        if len({c for c in raw if not c.isdigit()}) > 1:
            continue  # mixed separators: a list of numbers, not one card
        digits = re.sub(r"\D", "", raw)
        if 13 <= len(digits) <= 19 and checks.card_prefix_ok(digits) and checks.luhn_ok(digits):
            yield m.span()


def _iban(text: str) -> Iterator[Span]:
    if not _gated(IBAN_GATE, text):
        return
    for m in IBAN_START.finditer(text):
        length = checks.IBAN_LENGTHS.get(m.group(1))
        if length is None:
            continue
        end = _iban_end(text, m.start(), length)
        if end is not None and checks.iban_ok(re.sub(r" ", "", text[m.start() : end])):
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
    if not _gated(PHONE_GATE, text):
        return
    for m in PHONE.finditer(text):
        raw = m.group().rstrip(" .-")
        digits = re.sub(r"\D", "", raw)
        if not 10 <= len(digits) <= 15 or len(set(re.findall(r"[.-]", raw))) > 1:
            continue  # too short for a full number, or mixed separators (a date or a version)
        yield m.start(), m.start() + len(raw)


PEM_BEGIN = re2.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----")
JWT = re2.compile(r"(eyJ[A-Za-z0-9_-]{8,})\.([A-Za-z0-9_-]{2,})\.([A-Za-z0-9_-]*)")
JWT_EDGE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_COMPILED: list[tuple[Rule, object]] = compiled()
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
# Every rule's pattern in one: a text none of them matches (most texts) is scanned once, not once
# per rule. RE2 falls back from its DFA to an exact matcher when a text exhausts the DFA's memory,
# so the gate never misses a match (an RE2 ``Set`` has no such fallback and may answer no match).
_ANY_RULE = re2.compile("|".join(f"(?:{rule.pattern})" for rule, _ in _COMPILED), _OPTIONS)


def _subject(text: str) -> str | bytes:
    """What RE2 scans: the ASCII bytes when the text is ASCII (its offsets are then the string's,
    and the binding skips re-encoding and re-counting characters per match), the string otherwise."""
    return text.encode("ascii") if text.isascii() else text


def _pem(text: str) -> Iterator[Span]:
    """A private key block to its END line (of the same label), or to the end of a truncated text."""
    cursor = 0
    for m in PEM_BEGIN.finditer(_subject(text)):
        if m.start() < cursor:
            continue
        label = text[m.start(1) : m.end(1)]
        closing = f"-----END {label}PRIVATE KEY{' BLOCK' if m.start(2) >= 0 else ''}-----"
        end = text.find(closing, m.end())
        cursor = len(text) if end < 0 else end + len(closing)
        yield m.start(), cursor


def _jwt(text: str) -> Iterator[Span]:
    for m in JWT.finditer(_subject(text)):
        start, end = m.span()
        if start and text[start - 1] in JWT_EDGE or end < len(text) and text[end] in JWT_EDGE:
            continue
        if checks.jwt_header_ok(text[m.start(1) : m.end(1)]):
            yield start, end


def _rule_spans(rule: Rule, regex, text: str, subject: str | bytes) -> Iterator[Span]:
    """The spans of one rule's matches that pass its edges, length range and check: group 1 (or
    the first group that took part) is the span, the next one that took part the part checked."""
    for m in regex.finditer(subject):
        groups = [m.span(i) for i in range(1, regex.groups + 1) if m.span(i)[0] >= 0]
        (start, end), (body_start, body_end) = groups[0], groups[1] if len(groups) > 1 else groups[0]
        matched_end = end
        while rule.trim and end > start and text[end - 1] in rule.trim:
            end -= 1
        if ".." in text[end:matched_end]:
            continue  # an elided value: ``pypi-AgEIcHlwaS5vcmc...``
        body_end = min(body_end, end)
        if start and text[start - 1] in rule.before or end < len(text) and text[end] in rule.after:
            continue
        body = text[body_start:body_end]
        if rule.lo <= len(body) <= rule.hi and (rule.check is None or rule.check(body)):
            yield start, end


def _secrets(text: str) -> Iterator[tuple[str, int, int]]:
    subject = _subject(text)
    if _ANY_RULE.search(subject) is None:
        return
    for rule, regex in _COMPILED:
        for start, end in _rule_spans(rule, regex, text, subject):
            yield rule.kind, start, end


def _in_url_authority(text: str, start: int) -> bool:
    """``scheme://user:password@host``: the part before ``@`` is a URL's user, not a mailbox."""
    head = text[max(0, start - 300) : start]
    word = head.rsplit(None, 1)[-1] if head and not head[-1].isspace() else ""
    return "://" in word


# The order is the priority where two findings overlap: a private key block holds base64 that may
# look like anything; a provider's token beats the generic assignment it stands in.
DETECTORS: dict[str, Callable[[str], Iterator[Span]]] = {
    "private-key": _pem,
    "jwt": _jwt,
    "secrets": None,  # type: ignore[dict-item]
    "card-number": _card,
    "iban": _iban,
    "email": _email,
    "phone": _phone,
}
KINDS: tuple[str, ...] = (*SECRET_KINDS, *PII_KINDS)


def detect(text: str) -> list[Finding]:
    """Every finding in ``text``, in order; where two overlap, the one found first (the order of
    ``DETECTORS``, then of :data:`.rules.RULES`) wins."""
    found: list[Finding] = []  # disjoint, kept in order of start: an overlap is two neighbours away
    starts: list[int] = []

    def add(kind: str, start: int, end: int) -> None:
        at = bisect.bisect_right(starts, start)
        if end <= start or at and found[at - 1].end > start or at < len(found) and found[at].start < end:
            return
        starts.insert(at, start)
        found.insert(at, Finding(kind, start, end))

    for kind, find in DETECTORS.items():
        if find is None:
            for rule_kind, start, end in _secrets(text):
                add(rule_kind, start, end)
        else:
            for start, end in find(text):
                add(kind, start, end)
    return found
