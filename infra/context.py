"""Reading the CDK context values (``-c name=value`` or cdk.json) strictly.

``-c`` gives strings, cdk.json gives JSON values: both are accepted, anything else is
refused naming the context key, so a typo fails the synth instead of deploying a default.
"""

from __future__ import annotations

import re
from typing import Any

EMBEDDERS = ("voyage", "openai", "minilm", "hashing")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no", "")


def flag(value: Any, name: str) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise SystemExit(f"-c {name}={value!r}: expected true or false")


def positive_int(value: Any, name: str, default: int, *, maximum: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.isdigit())):
        raise SystemExit(f"-c {name}={value!r}: expected a whole number from 1 to {maximum}")
    number = int(value)
    if not 1 <= number <= maximum:
        raise SystemExit(f"-c {name}={value!r}: expected a whole number from 1 to {maximum}")
    return number


def embedder(value: Any) -> str:
    if value is None:
        return "voyage"
    if value not in EMBEDDERS:
        raise SystemExit(f"-c embedder={value!r}: expected one of {', '.join(EMBEDDERS)}")
    return value


_KMS_ARN = re.compile(r"arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]{1,128}")


def kms_key_arn(value: Any) -> str | None:
    """The customer's KMS key by ARN (an alias cannot be granted to); unset or '' for the stack's own."""
    if value in (None, ""):
        return None
    if not isinstance(value, str) or not _KMS_ARN.fullmatch(value):
        raise SystemExit(f"-c kms_key_arn={value!r}: expected a KMS key ARN, arn:aws:kms:REGION:ACCOUNT:key/ID")
    return value


SEARCH_STARTS = ("on-demand", "snapstart", "provisioned:N")
MAX_PROVISIONED = 100  # a guard against a typo that would bill 1,000 warm environments


def search_start(value: Any) -> tuple[str, int]:
    """``-c search_start=``: how the search route's function starts. ``on-demand`` (the default:
    cold starts as they come), ``snapstart`` (Lambda restores a snapshot taken after the imports:
    no warm capacity to pay for, a restore instead of an import), or ``provisioned:N`` (N
    environments kept warm, billed by the hour). Lambda allows the last two only apart."""
    if value in (None, "", "on-demand"):
        return "on-demand", 0
    if value == "snapstart":
        return "snapstart", 0
    text = str(value)
    kind, _, count = text.partition(":")
    if kind == "provisioned" and count.isdigit() and 1 <= int(count) <= MAX_PROVISIONED:
        return "provisioned", int(count)
    raise SystemExit(
        f"-c search_start={value!r}: expected on-demand, snapstart or provisioned:N (N from 1 to {MAX_PROVISIONED})"
    )


ATLAS_NETWORKS = ("privatelink", "nat", "public")
# What Atlas shows when you add an AWS private endpoint: the endpoint service's name.
_ENDPOINT_SERVICE = re.compile(r"com\.amazonaws\.vpce\.[a-z0-9-]+\.vpce-svc-[0-9a-f]{8,17}")


def atlas_network(value: Any, endpoint_service: Any = None) -> str:
    """How the functions reach Atlas (infra/atlas_network.py). Unset: PrivateLink when Atlas's
    endpoint service is given, else public (as before, with the synth's warning)."""
    if value in (None, ""):
        return "privatelink" if endpoint_service not in (None, "") else "public"
    if value not in ATLAS_NETWORKS:
        raise SystemExit(f"-c atlas_network={value!r}: expected one of {', '.join(ATLAS_NETWORKS)}")
    return value


def atlas_endpoint_service(value: Any, network: str) -> str | None:
    """The Atlas private endpoint service's name: required with PrivateLink, refused otherwise."""
    if value in (None, ""):
        if network == "privatelink":
            raise SystemExit(
                "-c atlas_network=privatelink needs -c atlas_endpoint_service=com.amazonaws.vpce."
                "REGION.vpce-svc-ID: Atlas shows it when you add an AWS private endpoint to the project "
                "(Network Access > Private Endpoint). Or choose -c atlas_network=nat (a fixed egress "
                "address for the IP access list) or -c atlas_network=public (0.0.0.0/0, not recommended)"
            )
        return None
    if network != "privatelink":
        raise SystemExit(f"-c atlas_endpoint_service is for -c atlas_network=privatelink, not {network}")
    if not isinstance(value, str) or not _ENDPOINT_SERVICE.fullmatch(value):
        raise SystemExit(
            f"-c atlas_endpoint_service={value!r}: expected com.amazonaws.vpce.REGION.vpce-svc-ID, as Atlas shows it"
        )
    return value


_SECRET_ARN = re.compile(
    r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}"
)
MAX_ROTATION_DAYS = 365  # Secrets Manager's own limit on a rotation schedule's interval


def secret_rotation(
    days: Any, admin_secret_arn: Any, *, route_out: bool, atlas_iam_auth: bool
) -> tuple[int, str] | None:
    """``-c secret_rotation_days=N`` with ``-c atlas_admin_secret_arn=ARN``: the database password
    rotated every N days (infra/rotation.py), or None when neither is given. The pair is refused
    where rotation could not work: without the other, with no password (IAM sign-in), or with no
    route to Atlas's Administration API, which is on the public internet only."""
    if days in (None, "") and admin_secret_arn in (None, ""):
        return None
    every = positive_int(days, "secret_rotation_days", 0, maximum=MAX_ROTATION_DAYS)
    if not every:
        raise SystemExit("-c atlas_admin_secret_arn is for rotation: give -c secret_rotation_days=N as well")
    if admin_secret_arn in (None, ""):
        raise SystemExit(
            "-c secret_rotation_days needs -c atlas_admin_secret_arn=ARN: a secret of yours holding an Atlas "
            'service account with the Project Database Access Admin role: {"client_id", "client_secret", "group_id"}'
        )
    if not isinstance(admin_secret_arn, str) or not _SECRET_ARN.fullmatch(admin_secret_arn):
        raise SystemExit(
            f"-c atlas_admin_secret_arn={admin_secret_arn!r}: expected a secret's full ARN, "
            "arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-SUFFIX"
        )
    if atlas_iam_auth:
        raise SystemExit("-c secret_rotation_days: with -c atlas_iam_auth=true there is no database password to rotate")
    if not route_out:
        raise SystemExit(
            "-c secret_rotation_days: Atlas's Administration API is on the public internet only, and these "
            "functions have no route out (PrivateLink with the local embedder); use -c atlas_network=nat, "
            "or -c atlas_iam_auth=true (no password to rotate)"
        )
    return every, admin_secret_arn
