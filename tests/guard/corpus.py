"""A labelled corpus for the detector: true positives in the shapes agents paste, and hard false
positives (UUIDs, git SHAs, base64 blobs, versions, dates, order numbers, 16-digit non-Luhn
numbers, documentation addresses). Each case: the text and the (kind, value) pairs it holds.

Key-like values are built by concatenation so this file does not itself look like a leak to a
repository scanner; none is a live credential (AWS's documented examples, test card numbers,
the IBAN registry's examples, random letters).
"""

import base64
import json


def _b64(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


AKIA = "AKIA" + "Q3EGRJ7XUHB4WZLM"  # fake, format-valid (AWS's documented AKIA...EXAMPLE is a placeholder)
ASIA = "ASIA" + "Y34FZKBOKMUTVV7A"
AWS_SECRET = "q8Zr2Lm9/Vx4Tn7Kp1Wb" + "6Hy3Jd5Fs0Gc+Na8Re2U"
AWS_EXAMPLE_ACCESS = "AKIA" + "IOSFODNN7EXAMPLE"  # AWS's documentation examples: not secrets
AWS_EXAMPLE_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GHP = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
GHO = "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a"
GHS = "ghs_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8"
GH_PAT = "github_pat_" + "11AQZ7R2Y0kX9vB3mT5nLc" + "_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4Y5z6A7b8C9d"
SLACK_BOT = "xoxb-" + "2718281828459-3141592653589-Qm7ZtR2vLx9KpW4nBc8YhJ3d"
SLACK_USER = "xoxp-" + "2345678901-2345678901-3456789012-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
OPENAI = "sk-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7OT3BlbkFJOp8Qr9St0Uv1Wx2Yz3Ab4Cd"
OPENAI_PROJ = "sk-proj-" + "Xy7_Zw6-Vu5Ts4Rq3Po2Nm1Lk0Ji9Hg8Fe7Dc6Ba5Zy4Xw3Vu2Ts1Rq0Po9Nm8Lk7Ji6Hg5Fe4Dc3Ba2"
PEM = (
    "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunV\n"
    "TLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyeh\n"
    "-----END RSA " + "PRIVATE KEY-----"
)
PEM_PKCS8 = (
    "-----BEGIN " + "PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n"
    "-----END " + "PRIVATE KEY-----"
)
JWT = (
    _b64({"alg": "HS256", "typ": "JWT"})
    + "."
    + _b64({"sub": "1234567890", "name": "Jane"})
    + ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
JWT_RS = (
    _b64({"alg": "RS256", "kid": "k1"})
    + "."
    + _b64({"iss": "https://auth.acme.io", "exp": 1767225600})
    + ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)

TRUE_POSITIVES = [
    (f"export AWS_ACCESS_KEY_ID={AKIA}", [("aws-access-key", AKIA)]),
    (f"the session used {ASIA} until it expired", [("aws-access-key", ASIA)]),
    (f"aws_secret_access_key = {AWS_SECRET}", [("aws-secret-key", AWS_SECRET)]),
    (
        f'{{"AccessKeyId": "{AKIA}", "SecretAccessKey": "{AWS_SECRET}"}}',
        [("aws-access-key", AKIA), ("aws-secret-key", AWS_SECRET)],
    ),
    (f"AWS_SECRET_ACCESS_KEY: '{AWS_SECRET}'", [("aws-secret-key", AWS_SECRET)]),
    (f"git clone https://{GHP}@github.com/acme/api.git", [("github-token", GHP)]),
    (f"Authorization: token {GHO}", [("github-token", GHO)]),
    (f"GITHUB_TOKEN={GHS} in the action log", [("github-token", GHS)]),
    (f"use the fine-grained token {GH_PAT}.", [("github-token", GH_PAT)]),
    (f"SLACK_BOT_TOKEN={SLACK_BOT}", [("slack-token", SLACK_BOT)]),
    (f"curl -H 'Authorization: Bearer {SLACK_USER}' https://slack.com/api/auth.test", [("slack-token", SLACK_USER)]),
    (f"OPENAI_API_KEY={OPENAI}", [("openai-key", OPENAI)]),
    (f'client = OpenAI(api_key="{OPENAI_PROJ}")', [("openai-key", OPENAI_PROJ)]),
    (f"the deploy key:\n{PEM}\nkeep it safe", [("private-key", PEM)]),
    (f"{PEM_PKCS8}", [("private-key", PEM_PKCS8)]),
    (f"Authorization: Bearer {JWT}", [("jwt", JWT)]),
    (f"id_token={JWT_RS}&state=xyz", [("jwt", JWT_RS)]),
    ("Visa test card 4111 1111 1111 1111 declined", [("card-number", "4111 1111 1111 1111")]),
    ("card=5555555555554444 exp 12/29", [("card-number", "5555555555554444")]),
    ("amex 3782-822463-10005 on file", [("card-number", "3782-822463-10005")]),
    ("Discover 6011111111111117.", [("card-number", "6011111111111117")]),
    ("JCB 3530111333300000 refunded", [("card-number", "3530111333300000")]),
    ("Reply to jane.doe@acme.io about the refund", [("email", "jane.doe@acme.io")]),
    ("From: Ken Ito <ken+billing@mail.tokyo-shop.co.jp>", [("email", "ken+billing@mail.tokyo-shop.co.jp")]),
    ("error: user MARIA_GARCIA@Contoso.COM not found", [("email", "MARIA_GARCIA@Contoso.COM")]),
    ("call her on +49 30 12345678 after six", [("phone", "+49 30 12345678")]),
    ("support line (415) 555-0132, ask for Sam", [("phone", "(415) 555-0132")]),
    ("mobile: +44 7911 123456", [("phone", "+44 7911 123456")]),
    ("ring 212-555-0199 for the landlord", [("phone", "212-555-0199")]),
    ("tel +1 (650) 253-0000", [("phone", "+1 (650) 253-0000")]),
    ("pay to IBAN DE89 3704 0044 0532 0130 00.", [("iban", "DE89 3704 0044 0532 0130 00")]),
    ("GB82WEST12345698765432 is the landlord's account", [("iban", "GB82WEST12345698765432")]),
    ("iban: FR14 2004 1010 0505 0001 3M02 606", [("iban", "FR14 2004 1010 0505 0001 3M02 606")]),
    ("NL91ABNA0417164300", [("iban", "NL91ABNA0417164300")]),
    (
        f"Customer jane@acme.io paid with 4111111111111111 from DE89370400440532013000, key {AKIA}",
        [
            ("email", "jane@acme.io"),
            ("card-number", "4111111111111111"),
            ("iban", "DE89370400440532013000"),
            ("aws-access-key", AKIA),
        ],
    ),
    # Known misses, kept so the recall is honest: a local number without a country code is too
    # close to an order number to flag conservatively, and a spelled-out address is not a pattern.
    ("ruf an: 030 12345678", [("phone", "030 12345678")]),
    ("write jane dot doe at acme dot io", [("email", "jane dot doe at acme dot io")]),
]

FALSE_POSITIVES = [
    f"aws configure: {AWS_EXAMPLE_ACCESS} / aws_secret_access_key = {AWS_EXAMPLE_SECRET} (from the AWS docs)",
    "request id 550e8400-e29b-41d4-a716-446655440000 failed",
    "fixed in commit 3f52e02a9c4b7d1e8f6a5b4c3d2e1f0a9b8c7d6e",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "blob: dGhpcyBpcyBub3QgYSBzZWNyZXQsIGp1c3QgYmFzZTY0IGVuY29kZWQgdGV4dCBpbiBhIGxvZw==",
    "integrity sha512-Q2xhc3NpY0tleUlkZW50aWZpZXJGb3JUaGlzUGFja2FnZUluQW5QYWNrYWdlTG9jaw==",
    "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEYab is a 40-character string with no secret name",
    "upgraded numpy 1.26.4 to 2.0.1 and python 3.12.3",
    "release 2024.10.15 on 2024-10-15T12:30:00Z (2024-10-15 12:30)",
    "order 1234567812345678 shipped",  # 16 digits, not Luhn
    "order number 4111111111111112 pending",  # a Visa prefix but not Luhn
    "tracking 9400111899223817460394 via USPS",
    "unix ms 1700000000000 and ns 1700000000000000000",
    "write to user@example.com or admin@docs.example.org as in the docs",
    "the test fixture uses alice@acme.test and bob@host.invalid",
    "git@github.com:acme/api.git is the remote",
    "pip install requests==2.31.0 and lodash@4.17.21 from npm",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQC7 user@laptop",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1Lf\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
    "eyJhbGciOiJIUzI1NiJ9 alone is just a header, and eyJub3QiOiJqd3QifQ.eyJ4IjoxfQ.abc has no alg",
    "pip install scikit-learn; sk-learn-is-a-common-misspelling-of-scikit-learn",
    "sk-ant is not an OpenAI key and neither is sk-1234",
    "the ghp_ prefix marks a GitHub personal token; ghp_short is not one",
    "xoxb- tokens start with xoxb; see the Slack docs",
    "AKIA is the prefix of long-term AWS keys; AKIAEXAMPLE is too short",
    "DE89 is a German IBAN prefix; DE89 3704 0044 0532 0130 01 fails mod-97",
    "GB82WEST1234569876543 is one character short",
    "IP 192.168.10.254 port 8080, mac 00:1A:2B:3C:4D:5E",
    "build 20241015.3 took 123456 ms, 98765 tokens",
    "the ISBN 978-3-16-148410-0 and the ISSN 2049-3630",
    "price 1,234,567.89 EUR, qty 1 000 000",
    "coordinates 52.520008, 13.404954",
    "version 10.0.19045.3693 of Windows",
    "invoice INV-2024-000123-4567 and PO 4500012345",
    "dates 12/31/2024 and 31.12.2024 and 2024/12/31",
    "range 100-200-3000 of the sequence",
    "@types/node and @angular/core are scoped packages",
    "the css color #aabbcc and rgba(1,2,3,0.5)",
    "chmod 0644 file, umask 022, pid 4111",
    "call duration 00:05:12, 415 ms latency, 555 requests",
]
