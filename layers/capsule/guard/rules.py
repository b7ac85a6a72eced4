"""The secret rules: one table of facts, every pattern compiled by RE2 (linear time, no backtracking).

The facts (prefixes, lengths, charsets, checksums) are those the well-kept scanners publish —
gitleaks' rule set, detect-secrets' plugins (keyword, URL credentials, basic auth, the provider
detectors), GitHub's token formats (a 6-character base62 CRC32 suffix) — carried here rather than
imported, because those scanners run Python ``re`` line by line with dozens of plugins each (slow on
the hot path of every store, and backtracking) and detect-secrets' settings are process-global.

A rule matches a literal prefix then the *maximal* run of its charset; the length range and a check
(entropy, character classes, a checksum, a decoded header) decide. A length off by a few characters
is still a token when the value looks generated: GitHub may lengthen its formats, and agents paste
truncated or re-wrapped values. A rule's ``before``/``after`` characters may not touch the value (a
prefix inside a longer word or a base64 blob is not a token): RE2 has no lookaround, so the detector
checks them around each match.
"""

from __future__ import annotations

from collections import namedtuple

import re2

from . import checks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
TOKEN = ALNUM | frozenset("_-")
B64 = ALNUM | frozenset("+/=")
NOTHING: frozenset[str] = frozenset()
DIGITS = frozenset("0123456789")
TRAIL = ".,;:!?)]}>"  # punctuation that ends a sentence, not a bare value


class Rule(namedtuple("Rule", "kind pattern lo hi check before after trim")):
    """``pattern``: RE2 source whose group 1 is the span to redact and group 2, when there is one,
    the part whose length (``lo``..``hi``) and ``check`` decide (group 1 otherwise)."""

    __slots__ = ()


def rule(
    kind: str,
    pattern: str,
    lo: int = 1,
    hi: int = 1024,
    check: Callable[[str], bool] | None = None,
    before: frozenset = TOKEN,
    after: frozenset = TOKEN,
    trim: str = "",
) -> Rule:
    return Rule(kind, pattern, lo, hi, check, before, after, trim)


def _random(bits: float = 3.0, classes: int = 2) -> Callable[[str], bool]:
    return lambda body: checks.random_enough(body, bits=bits, classes=classes)


def _not_placeholder(value: str) -> bool:
    return not checks.placeholder(value)


def _openai(body: str) -> bool:
    # OpenAI's keys mix cases and digits; OpenAI-compatible providers' (DeepSeek) are 32 lowercase hex.
    return (
        checks.mixed_case_and_digits(body)
        and checks.random_enough(body)
        or (len(body) == 32 and all(c in "0123456789abcdef" for c in body) and checks.random_enough(body))
    )


def _github(body: str) -> bool:
    return checks.random_enough(body, bits=3.5) or checks.github_checksum_ok(body)


def _hex(body: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in body) and checks.random_enough(body, bits=3.0)


_REFERENCE_MARKS = (
    "://",
    "sha256:",
    "sha512:",
    "sha1:",
    "md5:",
    "os.environ",
    "process.env",
    "getenv",
    "secrets.",
    "env.",
    "vault:",
    "arn:aws",
    "ssm:",
    "file:",
    "keyring",
    "secretsmanager",
    "parameter store",
)


def generic_value(value: str) -> bool:
    """A value assigned to a secret's name that is itself a secret: long enough, generated-looking
    (several character classes, a digit, the entropy of its length), and not a reference to one
    (``${VAR}``, ``os.environ[...]``, a path, a URL, ``settings.API_KEY``), a placeholder or a name
    (``my-app-secret``, ``Password123``)."""
    if not 8 <= len(value) <= 256 or value[0] in "$%{<[(!*&@~/.\\#":
        return False
    low = value.lower()
    if any(mark in low for mark in _REFERENCE_MARKS) or checks.placeholder(value) or _name_like(value):
        return False
    if all(c.isdigit() or c in ".:/-_ " for c in value):
        return False  # a number, a date, a version
    if not any(c.isdigit() for c in value) and not (
        any(c.isupper() for c in value) and any(c.islower() for c in value)
    ):
        return False  # a generated value without a digit still mixes cases; a word in one case does not
    return checks.random_enough(value, bits=3.0)


def _name_like(value: str) -> bool:
    """Words and version numbers joined by separators: a resource's name, an identifier, a dotted
    attribute path — not a credential."""
    parts = [p for p in _SEPARATORS.split(value) if p]
    words = [p for p in parts if _NAME_PART.fullmatch(p)]
    # a short part beside words is a name's suffix (``db-creds-7f9c``), not a generated value
    return bool(words) and any(len(w) >= 3 for w in words) and all(p in words or len(p) <= 5 for p in parts)


_SEPARATORS = re2.compile(r"[-_./: ]")
_NAME_PART = re2.compile(r"(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)(?:[A-Z][a-z]+)*[0-9]{0,4}|v?[0-9]{1,4}")


def _url_password(value: str) -> bool:
    if value[0] in "$%{<[*" or "${" in value or "{{" in value:
        return False
    return not checks.placeholder(value)


_KEYWORDS = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key"
    r"|private[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|app[_-]?key|credentials?|auth"
)
_VALUE = r"""(?:"([^"\s]{1,256})"|'([^'\s]{1,256})'|([^\s'"`,;&<>(){}\[\]]{1,256}))"""

# Order matters where two rules could claim the same text: the more specific rule comes first.
RULES: tuple[Rule, ...] = (
    # --- providers with a published format (prefix, charset, length) ---------------------------------
    rule(
        "aws-access-key", r"((?:AKIA|ASIA|ABIA|ACCA)([A-Z0-9]+))", 16, 16, _not_placeholder, before=ALNUM, after=ALNUM
    ),
    rule("github-token", r"((?:ghp|gho|ghu|ghs|ghr)_([A-Za-z0-9]+))", 30, 255, _github),
    rule("github-token", r"(github_pat_([A-Za-z0-9_]+))", 70, 255, _random(3.5)),
    rule(
        "gitlab-token",
        r"(gl(?:pat|dt|rt|ptt|cbt|soat|ffct|imt|agent|oas|wt)-([A-Za-z0-9_.-]+))",
        20,
        255,
        _random(3.0),
        trim=".",
    ),
    rule("gitlab-token", r"(GR1348941([A-Za-z0-9_-]+))", 20, 64, _random(3.0)),
    rule("slack-token", r"(xox[baprse]-(?:[0-9]+-)+([A-Za-z0-9]+))", 10, 255, _random(3.0)),
    rule("slack-token", r"(xapp-([0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+))", 20, 255, _random(3.0)),
    rule(
        "slack-webhook",
        r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/T[A-Z0-9]+/[A-Z0-9]+/([A-Za-z0-9]+))",
        16,
        64,
        _random(3.0),
    ),
    rule("anthropic-key", r"(sk-ant-(?:api|admin|sid|oat)?[0-9]{0,2}-?([A-Za-z0-9_-]+))", 32, 255, _random(3.5)),
    rule("model-provider-key", r"(sk-or-v1-([a-f0-9]+))", 64, 64, _hex),  # OpenRouter
    rule("openai-key", r"(sk-(?:proj-|svcacct-|admin-|None-)?([A-Za-z0-9_-]+))", 20, 255, _openai),
    rule("huggingface-token", r"((?:hf_|api_org_)([A-Za-z0-9]+))", 30, 40, _random(3.5)),
    rule("groq-key", r"(gsk_([A-Za-z0-9]+))", 48, 56, _random(3.5)),
    rule("model-provider-key", r"(xai-([A-Za-z0-9]+))", 70, 90, _random(3.5)),  # xAI
    rule("model-provider-key", r"(r8_([A-Za-z0-9]+))", 36, 40, _random(3.5)),  # Replicate
    rule("model-provider-key", r"(pplx-([A-Za-z0-9]+))", 40, 56, _random(3.5)),  # Perplexity
    rule("model-provider-key", r"(nvapi-([A-Za-z0-9_-]+))", 60, 70, _random(3.5)),  # NVIDIA
    rule("model-provider-key", r"(lsv2_(?:pt|sk)_([a-f0-9]{32}_[a-f0-9]+))", 43, 43, _random(3.0)),  # LangSmith
    rule("stripe-key", r"((?:sk|rk)_(?:live|test)_([A-Za-z0-9]+))", 20, 247, _random(3.5)),
    rule("stripe-key", r"(whsec_([A-Za-z0-9]+))", 32, 64, _random(3.5)),
    rule("google-api-key", r"(AIza([0-9A-Za-z_-]+))", 35, 35, _random(3.5)),
    rule("google-oauth-secret", r"(GOCSPX-([0-9A-Za-z_-]+))", 28, 28, _random(3.5)),
    rule("npm-token", r"(npm_([A-Za-z0-9]+))", 34, 40, _random(3.5)),
    rule("pypi-token", r"(pypi-(AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]+))", 60, 400, _random(3.5)),
    rule("twilio-key", r"((?:SK|AC)([0-9a-fA-F]+))", 32, 32, _hex, before=ALNUM, after=ALNUM),
    rule("sendgrid-key", r"(SG\.([A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]+))", 56, 80, _random(3.5)),
    rule(
        "azure-storage-key",
        r"(?i:AccountKey|SharedAccessKey)=(([A-Za-z0-9+/]{20,}={0,2}))",
        40,
        100,
        _random(3.5),
        before=NOTHING,
        after=B64,
    ),
    rule("azure-storage-key", r"[?&]sig=(([A-Za-z0-9%+/]{40,}={0,2}))", 40, 200, _random(3.5), before=NOTHING),
    # the long tail (gitleaks' rule facts), one kind: the redaction says a service token was here
    rule("api-token", r"(shp(?:at|ca|pa|ss)_([a-fA-F0-9]+))", 32, 32, _hex),  # Shopify
    rule("api-token", r"(do[opr]_v1_([a-f0-9]+))", 64, 64, _hex),  # DigitalOcean
    rule("api-token", r"(dp\.(?:pt|st|sa|ct|scim|audit)\.([A-Za-z0-9]+))", 40, 48, _random(3.5)),  # Doppler
    rule("api-token", r"(lin_api_([A-Za-z0-9]+))", 40, 40, _random(3.5)),  # Linear
    rule("api-token", r"(ntn_([A-Za-z0-9]+))", 40, 50, _random(3.5)),  # Notion
    rule("api-token", r"(ATATT3([A-Za-z0-9_=-]+))", 150, 220, _random(3.5)),  # Atlassian
    rule("api-token", r"(PMAK-([a-f0-9]{24}-[a-f0-9]+))", 59, 59, _random(3.0)),  # Postman
    rule("api-token", r"(dapi([a-f0-9]+)(?:-[0-9])?)", 32, 32, _hex),  # Databricks
    rule("api-token", r"(pul-([a-f0-9]+))", 40, 40, _hex),  # Pulumi
    rule("api-token", r"([A-Za-z0-9]{14}\.atlasv1\.([A-Za-z0-9_=-]+))", 60, 70, _random(3.5)),  # Terraform Cloud
    rule("api-token", r"((?:glsa|glc)_([A-Za-z0-9_=+/-]+))", 32, 200, _random(3.5)),  # Grafana
    rule("api-token", r"(dckr_pat_([A-Za-z0-9_-]+))", 24, 40, _random(3.5)),  # Docker Hub
    rule("api-token", r"(sntry[su]_([A-Za-z0-9_=+/-]+))", 40, 400, _random(3.5)),  # Sentry
    rule("api-token", r"([0-9]{8,10}:(AA[A-Za-z0-9_-]+))", 35, 35, _random(3.5), before=DIGITS),  # Telegram bot
    rule("api-token", r"(HRKU-([A-Za-z0-9_-]+))", 36, 80, _random(3.0)),  # Heroku
    # --- a credential named by where it stands --------------------------------------------------------
    rule(
        "url-credential",
        r"[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/?#@'\"<>\[\]]{0,256}:([^\s/?#'\"<>]{1,256})@[A-Za-z0-9\[]",
        check=_url_password,
        before=NOTHING,
        after=NOTHING,
    ),
    rule(
        "aws-secret-key",
        r"(?i:aws_?secret(?:_?access)?_?key|secret_?access_?key|aws_?secret)[\"']?\s*(?:[:=]|=>)\s*[\"']?([A-Za-z0-9/+]{40})",
        40,
        40,
        _random(3.5),
        before=NOTHING,
        after=B64,
    ),
    rule(
        "aws-secret-key",
        r"(?:AKIA|ASIA)[A-Z0-9]{16}[\s,;:|\"']{1,4}([A-Za-z0-9/+]{40})",
        40,
        40,
        _random(4.0),
        before=NOTHING,
        after=B64,
    ),
    rule(
        "datadog-key",
        r"(?i:(?:dd|datadog)[_-]?(?:api|app|application)[_-]?key)[\"']?[ \t]*(?:=|:|=>)[ \t]*[\"']?([a-fA-F0-9]{32,40})",
        32,
        40,
        _hex,
        before=NOTHING,
        after=ALNUM,
    ),
    rule(
        "generic-secret",
        rf"(?i)[A-Za-z0-9_.-]*(?:{_KEYWORDS})(?:[_-]?key|[_-]?base)?[\"']?[ \t]*(?:=|:=|=>|:)[ \t]*{_VALUE}",
        check=generic_value,
        before=NOTHING,
        after=NOTHING,
        trim=TRAIL,
    ),
    rule(
        "generic-secret",
        r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)",
        check=generic_value,
        before=NOTHING,
        after=NOTHING,
        trim=".",
    ),
    rule(
        "generic-secret",
        r"(?i)\bbasic[ \t]+([A-Za-z0-9+/]{8,}={0,2})",
        check=checks.basic_auth_ok,
        before=NOTHING,
        after=B64,
    ),
    rule(
        "generic-secret",
        r"(?i)(?:^|\s)--?(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token"
        r"|access-token)(?:=|[ \t]+)[\"']?([^\s'\"]{1,256})",
        check=generic_value,
        before=NOTHING,
        after=NOTHING,
        trim=TRAIL,
    ),
    rule(
        "generic-secret",
        r"(?i)\bmysql(?:dump|admin)?\b[^\n]*?\s-p([^\s'\"]{4,256})",
        check=generic_value,
        before=NOTHING,
        after=NOTHING,
    ),
    rule(
        "generic-secret",
        r"(?i)\b(?:password|passwd|passphrase|secret|token|api key)[ \t]+(?:is[ \t]+|was[ \t]+)?[\"'`]?([^\s'\"`]{8,256})",
        check=generic_value,
        before=NOTHING,
        after=NOTHING,
        trim=TRAIL,
    ),
)

SECRET_KINDS: tuple[str, ...] = tuple(dict.fromkeys(["private-key", *(r.kind for r in RULES), "jwt", "card-number"]))


def compiled() -> list[tuple[Rule, object]]:
    options = re2.Options()
    options.log_errors = False
    return [(r, re2.compile(r.pattern, options)) for r in RULES]
