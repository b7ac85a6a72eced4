"""A labelled set for the secret rules (issue 37): texts written the way agents store them — `.env`
lines, shell history, CI logs, stack traces, docker-compose files, curl commands — half holding a
secret, half a look-alike (UUIDs, git SHAs, sha256 sums, base64 images, versions, documentation
placeholders such as ``<your-token-here>``, ``${VAR}``, ``xxxx``, ``changeme``, AWS's documented
example keys).

Every secret here is FAKE: built at import from a seeded random generator (``FAKE``), in the format
its provider publishes (prefix, charset, length, GitHub's CRC32 suffix), so the set is stable and
this file holds no token a repository scanner would mistake for a leak. A text is a ``str.format``
template over ``FAKE``; its labels are (kind, name in ``FAKE``) pairs, the exact value the detector
must find (for a URL, the password only).

    .venv/bin/python -m tests.guard.evaluate --labelled      # the per-kind table
"""

from __future__ import annotations

import base64
import json
import random
import string

from capsule.guard.checks import github_checksum, placeholder

_R = random.Random(37)
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
URLSAFE = B62 + "-_"
B64 = B62 + "+/"
B32 = string.ascii_uppercase + "234567"


def _rnd(n: int, alphabet: str = B62) -> str:
    groups = [g for g in (string.ascii_lowercase, string.ascii_uppercase, string.digits) if set(g) & set(alphabet)]
    while True:  # drawn again when it happens to spell a placeholder word or to miss a class of its alphabet
        value = "".join(_R.choice(alphabet) for _ in range(n))
        if not placeholder(value) and sum(any(c in g for c in value) for g in groups) >= min(2, len(groups)):
            return value


def _b64(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


P = "_"  # prefixes are joined at run time, so no literal in this file has a provider's full shape
FAKE: dict[str, str] = {
    "akia": "AK" + "IA" + _rnd(16, B32),
    "asia": "AS" + "IA" + _rnd(16, B32),
    "aws_secret": _rnd(40, B64),
    "aws_secret2": _rnd(40, B64),
    "ghp": github_checksum("gh" + "p", _rnd(30)),
    "gho": github_checksum("gh" + "o", _rnd(30)),
    "ghu": github_checksum("gh" + "u", _rnd(30)),
    "ghs": github_checksum("gh" + "s", _rnd(30)),
    "ghr": github_checksum("gh" + "r", _rnd(30)),
    "ghp_short": "gh" + "p" + P + _rnd(33),
    "ghp_long": "gh" + "p" + P + _rnd(40),
    "ghs_short": "gh" + "s" + P + _rnd(34),
    "gh_pat": "github" + P + "pat" + P + _rnd(22) + P + _rnd(59),
    "gh_pat_off": "github" + P + "pat" + P + _rnd(22) + P + _rnd(55),
    "glpat": "gl" + "pat-" + _rnd(20, URLSAFE),
    "glrt": "gl" + "rt-" + _rnd(20, URLSAFE),
    "glpat2": "gl" + "pat-" + _rnd(26, URLSAFE),
    "xoxb": "xo" + "xb-" + _rnd(13, string.digits) + "-" + _rnd(13, string.digits) + "-" + _rnd(24),
    "xoxp": "xo"
    + "xp-"
    + _rnd(10, string.digits)
    + "-"
    + _rnd(11, string.digits)
    + "-"
    + _rnd(12, string.digits)
    + "-"
    + _rnd(32, HEX),
    "xapp": "xa"
    + "pp-1-"
    + _rnd(11, string.ascii_uppercase + string.digits)
    + "-"
    + _rnd(13, string.digits)
    + "-"
    + _rnd(64, HEX),
    "slack_hook": "https://hooks.slack.com/services/T"
    + _rnd(10, "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789")
    + "/B"
    + _rnd(10, "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789")
    + "/"
    + _rnd(24),
    "ant": "sk-" + "ant-api03-" + _rnd(93, URLSAFE) + "AA",
    "ant_admin": "sk-" + "ant-admin01-" + _rnd(93, URLSAFE) + "AA",
    "ant_short": "sk-" + "ant-api03-" + _rnd(60, URLSAFE),
    "openai": "sk-" + _rnd(20) + "T3Blbk" + "FJ" + _rnd(20),
    "openai_proj": "sk-" + "proj-" + _rnd(120, URLSAFE),
    "openai_svc": "sk-" + "svcacct-" + _rnd(64, URLSAFE),
    "deepseek": "sk-" + _rnd(32, HEX),
    "hf": "h" + "f_" + _rnd(34, string.ascii_letters),
    "hf2": "h" + "f_" + _rnd(34, string.ascii_letters),
    "groq": "gs" + "k_" + _rnd(52),
    "groq2": "gs" + "k_" + _rnd(52),
    "xai": "xa" + "i-" + _rnd(80),
    "replicate": "r8" + P + _rnd(37),
    "pplx": "pp" + "lx-" + _rnd(48),
    "openrouter": "sk-" + "or-v1-" + _rnd(64, HEX),
    "nvapi": "nv" + "api-" + _rnd(64, URLSAFE),
    "stripe_live": "sk" + P + "live" + P + _rnd(24),
    "stripe_live2": "sk" + P + "live" + P + _rnd(99),
    "stripe_rk": "rk" + P + "live" + P + _rnd(24),
    "stripe_test": "sk" + P + "test" + P + _rnd(24),
    "stripe_whsec": "wh" + "sec" + P + _rnd(32),
    "google": "AI" + "za" + "Sy" + _rnd(33, URLSAFE),
    "google2": "AI" + "za" + "Sy" + _rnd(33, URLSAFE),
    "gocspx": "GOC" + "SPX-" + _rnd(28, URLSAFE),
    "npm": "np" + "m_" + _rnd(36),
    "npm2": "np" + "m_" + _rnd(36),
    "pypi": "py" + "pi-" + "AgEIcHlwaS5vcmc" + _rnd(140, URLSAFE),
    "pypi_test": "py" + "pi-" + "AgENdGVzdC5weXBpLm9yZw" + _rnd(120, URLSAFE),
    "twilio_sk": "S" + "K" + _rnd(32, HEX),
    "twilio_ac": "A" + "C" + _rnd(32, HEX),
    "sendgrid": "S" + "G." + _rnd(22, URLSAFE) + "." + _rnd(43, URLSAFE),
    "sendgrid2": "S" + "G." + _rnd(22, URLSAFE) + "." + _rnd(43, URLSAFE),
    "azure": _rnd(86, B64) + "==",
    "azure_sb": _rnd(43, B64) + "=",
    "dd_api": _rnd(32, HEX),
    "dd_app": _rnd(40, HEX),
    "dd_api2": _rnd(32, HEX),
    "shopify": "sh" + "pat" + P + _rnd(32, HEX),
    "digitalocean": "do" + "p" + P + "v1" + P + _rnd(64, HEX),
    "linear": "lin" + P + "api" + P + _rnd(40),
    "telegram": _rnd(10, string.digits) + ":" + "AA" + _rnd(33, URLSAFE),
    "dockerhub": "dc" + "kr" + P + "pat" + P + _rnd(27, URLSAFE),
    "databricks": "da" + "pi" + _rnd(32, HEX),
    "pw_url1": _rnd(16, B62 + "-_.~"),
    "pw_url2": _rnd(12),
    "pw_url3": _rnd(20, B62 + "!$*"),
    "pw_url4": _rnd(14),
    "pw_url5": _rnd(18),
    "pw_url6": _rnd(10),
    "gen1": _rnd(32),
    "gen2": _rnd(24, B62 + "!#%^*-_"),
    "gen3": _rnd(40, HEX),
    "gen4": _rnd(16, B62 + "@#$%&"),
    "gen5": _rnd(28),
    "gen6": _rnd(48, B64),
    "gen7": _rnd(20),
    "gen8": _rnd(36),
    "gen9": _rnd(22, URLSAFE),
    "gen10": _rnd(30),
    "gen11": _rnd(12, B62 + "!@#"),
    "gen12": _rnd(64, HEX),
    "basic": base64.b64encode(b"deploy:" + _rnd(18).encode()).decode(),
    "jwt": _b64({"alg": "HS256", "typ": "JWT"}) + "." + _b64({"sub": "42", "role": "admin"}) + "." + _rnd(43, URLSAFE),
    "pem": "-----BEGIN EC "
    + "PRIVATE KEY-----\n"
    + _rnd(64, B64)
    + "\n"
    + _rnd(56, B64)
    + "\n-----END EC "
    + "PRIVATE KEY-----",
    "pem_openssh": "-----BEGIN OPENSSH "
    + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU"
    + _rnd(40, B64)
    + "\n-----END OPENSSH "
    + "PRIVATE KEY-----",
}
FAKE["mysql_pw"] = _rnd(14)

# (template, [(kind, name in FAKE)])
SECRETS: list[tuple[str, list[tuple[str, str]]]] = [
    # .env files and exports
    (
        "# .env\nAWS_ACCESS_KEY_ID={akia}\nAWS_SECRET_ACCESS_KEY={aws_secret}\nAWS_REGION=eu-west-1",
        [("aws-access-key", "akia"), ("aws-secret-key", "aws_secret")],
    ),
    (
        '$ aws sts get-session-token\n{{"AccessKeyId": "{asia}", "SecretAccessKey": "{aws_secret2}"}}',
        [("aws-access-key", "asia"), ("aws-secret-key", "aws_secret2")],
    ),
    (
        "credentials.csv:\nUser name,Access key ID,Secret access key\nci-bot,{akia},{aws_secret}",
        [("aws-access-key", "akia"), ("aws-secret-key", "aws_secret")],
    ),
    ("export GITHUB_TOKEN={ghp}", [("github-token", "ghp")]),
    (
        "remote: Invalid username or password.\nfatal: Authentication failed for 'https://{gho}@github.com/acme/api.git/'",
        [("github-token", "gho")],
    ),
    ("gh auth status\n  - Token: {ghu}\n  - Token scopes: repo, workflow", [("github-token", "ghu")]),
    ("Run actions/checkout@v4\n  token: {ghs}\n  ssh-strict: true", [("github-token", "ghs")]),
    ("refresh_token={ghr}&grant_type=refresh_token", [("github-token", "ghr")]),
    ("pasted the token {ghp_short} (it looks shorter than usual?)", [("github-token", "ghp_short")]),
    ("GH_TOKEN={ghp_long} gh release create v2.1.0", [("github-token", "ghp_long")]),
    ("docker login ghcr.io -u acme-bot -p {ghs_short}", [("github-token", "ghs_short")]),
    ("fine-grained PAT for the deploy job: {gh_pat}", [("github-token", "gh_pat")]),
    ("GITHUB_PAT='{gh_pat_off}'  # copied from the settings page", [("github-token", "gh_pat_off")]),
    ("git remote set-url origin https://oauth2:{glpat}@gitlab.com/acme/infra.git", [("gitlab-token", "glpat")]),
    ("gitlab-runner register --url https://gitlab.com --token {glrt}", [("gitlab-token", "glrt")]),
    (
        'CI_JOB: curl --header "PRIVATE-TOKEN: {glpat2}" https://gitlab.com/api/v4/projects',
        [("gitlab-token", "glpat2")],
    ),
    ("SLACK_BOT_TOKEN={xoxb}\nSLACK_SIGNING_SECRET=on-vault", [("slack-token", "xoxb")]),
    ("slack_sdk.errors.SlackApiError: invalid_auth (token={xoxp})", [("slack-token", "xoxp")]),
    ("socket mode app token: {xapp}", [("slack-token", "xapp")]),
    ('notify step: curl -X POST -d \'{{"text":"deploy done"}}\' {slack_hook}', [("slack-webhook", "slack_hook")]),
    # model providers
    ("ANTHROPIC_API_KEY={ant}", [("anthropic-key", "ant")]),
    (
        "anthropic.AuthenticationError: Error code: 401 - invalid x-api-key {ant_admin}",
        [("anthropic-key", "ant_admin")],
    ),
    ('client = Anthropic(api_key="{ant_short}")  # truncated in the paste', [("anthropic-key", "ant_short")]),
    ("OPENAI_API_KEY={openai}", [("openai-key", "openai")]),
    ("openai.AuthenticationError: Incorrect API key provided: {openai_proj}", [("openai-key", "openai_proj")]),
    ('$ export OPENAI_API_KEY="{openai_svc}" && python agent.py', [("openai-key", "openai_svc")]),
    ("DEEPSEEK_API_KEY={deepseek}", [("openai-key", "deepseek")]),
    ("huggingface-cli login --token {hf}", [("huggingface-token", "hf")]),
    ("HF_TOKEN={hf2} python train.py --push-to-hub", [("huggingface-token", "hf2")]),
    ("GROQ_API_KEY={groq}", [("groq-key", "groq")]),
    ("groq.AuthenticationError: invalid key {groq2}", [("groq-key", "groq2")]),
    ("XAI_API_KEY={xai}", [("model-provider-key", "xai")]),
    ("export REPLICATE_API_TOKEN={replicate}", [("model-provider-key", "replicate")]),
    ("perplexity: Authorization failed for {pplx}", [("model-provider-key", "pplx")]),
    ("OPENROUTER_API_KEY={openrouter}", [("model-provider-key", "openrouter")]),
    ("NVIDIA_API_KEY={nvapi}", [("model-provider-key", "nvapi")]),
    # payments, cloud, package registries
    ("stripe.error.AuthenticationError: Invalid API Key provided: {stripe_live}", [("stripe-key", "stripe_live")]),
    ("STRIPE_SECRET_KEY={stripe_live2}", [("stripe-key", "stripe_live2")]),
    ("restricted key for the reporting job: {stripe_rk}", [("stripe-key", "stripe_rk")]),
    ("stripe listen --api-key {stripe_test} --forward-to localhost:3000/webhooks", [("stripe-key", "stripe_test")]),
    ("STRIPE_WEBHOOK_SECRET={stripe_whsec}", [("stripe-key", "stripe_whsec")]),
    (
        "maps: https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={google}",
        [("google-api-key", "google")],
    ),
    (
        'const firebaseConfig = {{ apiKey: "{google2}", authDomain: "acme.firebaseapp.com" }};',
        [("google-api-key", "google2")],
    ),
    ("GOOGLE_CLIENT_SECRET={gocspx}", [("google-oauth-secret", "gocspx")]),
    ("# ~/.npmrc\n//registry.npmjs.org/:_authToken={npm}", [("npm-token", "npm")]),
    ("NPM_TOKEN={npm2} npm publish --access public", [("npm-token", "npm2")]),
    ("twine upload dist/* -u __token__ -p {pypi}", [("pypi-token", "pypi")]),
    ("[testpypi]\n  username = __token__\n  password = {pypi_test}", [("pypi-token", "pypi_test")]),
    (
        "TWILIO_API_KEY={twilio_sk}\nTWILIO_ACCOUNT_SID={twilio_ac}",
        [("twilio-key", "twilio_sk"), ("twilio-key", "twilio_ac")],
    ),
    ("twilio.base.exceptions.TwilioRestException: HTTP 401 for account {twilio_ac}", [("twilio-key", "twilio_ac")]),
    ("SENDGRID_API_KEY={sendgrid}", [("sendgrid-key", "sendgrid")]),
    (
        "python_http_client.exceptions.UnauthorizedError: HTTP Error 401 (key {sendgrid2})",
        [("sendgrid-key", "sendgrid2")],
    ),
    (
        "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={azure};EndpointSuffix=core.windows.net",
        [("azure-storage-key", "azure")],
    ),
    (
        "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={azure_sb}",
        [("azure-storage-key", "azure_sb")],
    ),
    ("DD_API_KEY={dd_api}\nDD_SITE=datadoghq.eu", [("datadog-key", "dd_api")]),
    (
        "datadog:\n  api_key: {dd_api2}\n  app_key: {dd_app}",
        [("generic-secret", "dd_api2"), ("generic-secret", "dd_app")],
    ),
    (
        'curl -H "DD-API-KEY: {dd_api}" -H "DD-APPLICATION-KEY: {dd_app}" https://api.datadoghq.com/api/v1/validate',
        [("datadog-key", "dd_api"), ("datadog-key", "dd_app")],
    ),
    ("SHOPIFY_ACCESS_TOKEN={shopify}", [("api-token", "shopify")]),
    ("doctl auth init -t {digitalocean}", [("api-token", "digitalocean")]),
    ("LINEAR_API_KEY={linear}", [("api-token", "linear")]),
    ("telegram bot https://api.telegram.org/bot{telegram}/getMe", [("api-token", "telegram")]),
    ("echo {dockerhub} | docker login -u acme --password-stdin", [("api-token", "dockerhub")]),
    ("DATABRICKS_TOKEN={databricks}", [("api-token", "databricks")]),
    # credentials inside URLs
    ("DATABASE_URL=postgresql://app:{pw_url1}@db.internal:5432/prod", [("url-credential", "pw_url1")]),
    (
        "pymongo.errors.OperationFailure: bad auth connecting to mongodb+srv://svc-reader:{pw_url2}@cluster0.q7xk2.mongodb.net/app",
        [("url-credential", "pw_url2")],
    ),
    (
        "  redis:\n    environment:\n      - REDIS_URL=redis://default:{pw_url3}@cache:6379/0",
        [("url-credential", "pw_url3")],
    ),
    ("celery worker -b amqp://guest2:{pw_url4}@rabbit.internal:5672//", [("url-credential", "pw_url4")]),
    ("pip install --index-url https://ci:{pw_url5}@pypi.acme.dev/simple acme-core", [("url-credential", "pw_url5")]),
    (
        "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to mysql+pymysql://root:{pw_url6}@10.0.3.7/app failed",
        [("url-credential", "pw_url6")],
    ),
    # generic assignments, headers, flags
    ("settings.py: SECRET_KEY = '{gen1}'", [("generic-secret", "gen1")]),
    (
        'docker-compose.yml:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: "{gen2}"',
        [("generic-secret", "gen2")],
    ),
    (
        '{{"client_id": "web-app", "client_secret": "{gen3}", "grant_type": "client_credentials"}}',
        [("generic-secret", "gen3")],
    ),
    ("$ mysql -u admin -p{mysql_pw} -h db.internal", [("generic-secret", "mysql_pw")]),
    ("config.yaml\n  auth:\n    api_key: {gen5}\n    timeout: 30", [("generic-secret", "gen5")]),
    ("curl -H 'Authorization: Bearer {gen6}' https://api.acme.dev/v1/me", [("generic-secret", "gen6")]),
    ("ENCRYPTION_KEY={gen7}", [("generic-secret", "gen7")]),
    ("kubectl create secret generic api --from-literal=token={gen8}", [("generic-secret", "gen8")]),
    ("vault login -method=userpass username=ops password={gen9}", [("generic-secret", "gen9")]),
    ("x-api-key: {gen10}", [("generic-secret", "gen10")]),
    ("the wifi password is {gen11} (guest network)", [("generic-secret", "gen11")]),
    ("psql --password {gen4} -U app", [("generic-secret", "gen4")]),
    ('webhook signing_secret => "{gen12}"', [("generic-secret", "gen12")]),
    ("curl -H 'Authorization: Basic {basic}' https://registry.acme.dev/v2/", [("generic-secret", "basic")]),
    # kept from the first eight kinds
    ("Authorization: Bearer {jwt}", [("jwt", "jwt")]),
    ("the staging signer:\n{pem}\n(do not commit)", [("private-key", "pem")]),
    ("cat ~/.ssh/id_ed25519\n{pem_openssh}", [("private-key", "pem_openssh")]),
]

LOOKALIKES: list[str] = [
    # identifiers and digests
    "request_id=550e8400-e29b-41d4-a716-446655440000 status=502 upstream timed out",
    "HEAD is now at 3f52e02a9c4b7d1e8f6a5b4c3d2e1f0a9b8c7d6e fix: retry the upload",
    "$ sha256sum dist/app.tar.gz\n9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  dist/app.tar.gz",
    "Digest: sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1\nStatus: Downloaded newer image for postgres:16",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7",
    "container 7d3f9c2b1a0e4d5c6b7a8f9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b5a6f7e8d9c exited with code 137",
    "md5 d41d8cd98f00b204e9800998ecf8427e matches the release checksum",
    '"resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz", "integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg=="',
    "git log --oneline\n a1592fd Vector Bridge tools\n c7439b1 Review: postings table\n 5d10d04 README and bench-results",
    '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">',
    '  File "/app/.venv/lib/python3.12/site-packages/httpx/_client.py", line 1015, in send\n<object at 0x7f3a2c1d4e50>',
    "upgraded numpy 1.26.4 -> 2.0.1, torch 2.3.1+cu121, python 3.12.3",
    "Successfully installed anthropic-0.34.2 openai-1.51.0 tiktoken-0.7.0",
    "deployed build 2024.10.15-rc.3 at 2024-10-15T12:30:00Z",
    'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"',
    "commit 3f52e02a9c4b7d1e8f6a5b4c3d2e1f0a9b8c7d6e\nAuthor: CI Bot <ci@acme.test>",
    # documentation placeholders
    "OPENAI_API_KEY=<your-api-key-here>",
    "export GITHUB_TOKEN=${GITHUB_TOKEN}",
    "      - name: checkout\n        with:\n          token: ${{ secrets.GITHUB_TOKEN }}",
    "DATABASE_URL=postgresql://user:password@localhost:5432/mydb",
    "mongodb+srv://<username>:<password>@cluster0.mongodb.net/?retryWrites=true",
    "mongodb+srv://user:pw@cluster0.ab1cd.mongodb.net/test (replace pw with your password)",
    "git clone https://user:${CI_JOB_TOKEN}@gitlab.com/acme/infra.git",
    "POSTGRES_PASSWORD=changeme",
    "STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
    "token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    'api_key: "AIzaSyXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"',
    "ANTHROPIC_API_KEY=sk-ant-...",
    "set ANTHROPIC_API_KEY=sk-ant-api03-your-key-here",
    "aws configure\nAWS Access Key ID [None]: AKIAIOSFODNN7EXAMPLE\nAWS Secret Access Key [None]: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AccountKey=<your-storage-account-key>;EndpointSuffix=core.windows.net",
    "DD_API_KEY=<DATADOG_API_KEY>",
    "SENDGRID_API_KEY=SG.xxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "Authorization: Bearer <token>",
    "curl -u admin:$ADMIN_PASSWORD https://jenkins.acme.dev/api/json",
    'password: "********"',
    "HF_TOKEN=hf_your_token_here",
    "NPM_TOKEN=npm_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "twilio: TWILIO_ACCOUNT_SID=ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "REDIS_PASSWORD={{ .Values.redis.password }}",
    "client_secret: REPLACE_ME",
    "password = 'your_password_here'",
    "PYPI_TOKEN=pypi-AgEIcHlwaS5vcmc...  # paste yours",
    # references to a secret, not the secret
    'api_key = os.environ["OPENAI_API_KEY"]',
    "token = settings.GITHUB_TOKEN",
    "const key = process.env.STRIPE_SECRET_KEY;",
    "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256",
    "DB_PASSWORD_FILE=/run/secrets/db_password",
    "secret: arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf",
    "valueFrom:\n  secretKeyRef:\n    name: app-secrets\n    key: password",
    "secret: app-secrets-v2",
    "credentials: include",
    "auth: true",
    "token_type: bearer\nexpires_in: 3600",
    "max_tokens=4096, temperature=0.2, tokenizer=cl100k_base",
    '"tokens": 1536, "prompt_tokens": 1200, "completion_tokens": 336',
    "password reset flow: POST /v1/password/reset (rate limited)",
    "the token limit is 200000 for this model",
    "Password123 is on the banned list for new accounts",
    "ssh -i ~/.ssh/deploy_key ubuntu@10.0.3.7",
    # look like a prefix, are not one
    "pip install scikit-learn; sk-learn is a common misspelling",
    "task-sk-1234 moved to done",
    "ASK0123456789abcdef0123456789abcdef is the build cache key",
    "AKIA is the prefix of long-term AWS keys; AKIAEXAMPLE is too short",
    "the ghp_ prefix marks a GitHub personal token; ghp_short is not one",
    "xoxb- tokens start with xoxb; see the Slack docs",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1Lf\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBa\n-----END CERTIFICATE-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ci@runner",
    "eyJhbGciOiJIUzI1NiJ9 is only a header",
    "redis://localhost:6379/0 and http://localhost:8080/health",
    "https://github.com/acme/api/actions/runs/9876543210/job/27182818284",
    "git@github.com:acme/api.git",
    'Exception in thread "main" java.lang.IllegalStateException: key must not be null\n\tat com.acme.Auth.sign(Auth.java:42)',
    "TypeError: Cannot read properties of undefined (reading 'token')\n    at verify (/app/src/auth.ts:17:23)",
    "INFO 2024-10-15 12:30:00,123 worker-3 pid=4111 processed 98765 tokens in 1234 ms",
    "color #aabbcc, build 20241015.3, port 5432, uid 1000",
    'cache key v3-deps-{{ checksum "poetry.lock" }}',
    "AWS_REGION=eu-west-1\nAWS_DEFAULT_OUTPUT=json\nAWS_PROFILE=staging",
    "the API key rotates every 90 days; see docs/ops/rotation.md",
]


def labelled_cases() -> list[tuple[str, list[tuple[str, str]]]]:
    """(text, [(kind, value)]) for every secret case, then the look-alikes with no labels."""
    cases = [(template.format(**FAKE), [(kind, FAKE[name]) for kind, name in labels]) for template, labels in SECRETS]
    return cases + [(text, []) for text in LOOKALIKES]
