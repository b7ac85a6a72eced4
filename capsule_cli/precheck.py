"""``capsule cloud precheck``: before a deploy, read the account's Lambda concurrency and warn
when it is below what the stage's throttle lets in.

API Gateway admits ``throttle_rate`` requests a second (``throttle_burst`` at once); each is a
Lambda invocation in flight for its duration, so the functions need about ``rate x seconds per
request`` concurrent executions (Little's law), and a burst may want ``burst`` at once. An
account's regional concurrency quota starts at 1,000, but a new account's is often 10, and
Lambda keeps 100 of it unreserved at all times: below the need, requests the stage admitted get
429s (``Rate Exceeded``) from Lambda instead. The quota is read from Service Quotas
(``L-B99A9384``, what the account may raise to) and ``lambda:GetAccountSettings`` (what is in
force now); either may be refused by the caller's policy, and the check says so.

Exit status: 0 when the account carries the throttle, 1 when it warns, 2 when nothing could be read.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

QUOTA_CODE = "L-B99A9384"  # Lambda: Concurrent executions
UNRESERVED_MINIMUM = 100  # Lambda keeps this much of the quota unreserved
DEFAULT_RATE, DEFAULT_BURST = 200, 400  # infra/api.py Throttle's defaults
DEFAULT_SECONDS = 0.5  # a request's average duration (a search with its embedding, warm)


@dataclass
class Precheck:
    region: str
    throttle_rate: int
    throttle_burst: int
    seconds_per_request: float
    needed: int  # concurrency the steady rate needs
    account_limit: int | None = None  # lambda:GetAccountSettings, in force now
    unreserved: int | None = None
    quota: int | None = None  # Service Quotas' value for L-B99A9384
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def status(self) -> int:
        if self.account_limit is None and self.quota is None:
            return 2
        return 1 if self.warnings else 0


def needed_concurrency(rate: int, seconds_per_request: float) -> int:
    return max(1, math.ceil(rate * seconds_per_request))


def check(
    *,
    lambda_client: Any,
    quotas_client: Any,
    region: str,
    rate: int = DEFAULT_RATE,
    burst: int = DEFAULT_BURST,
    seconds_per_request: float = DEFAULT_SECONDS,
) -> Precheck:
    result = Precheck(region, rate, burst, seconds_per_request, needed_concurrency(rate, seconds_per_request))
    try:
        settings = lambda_client.get_account_settings()
        result.account_limit = int(settings["AccountLimit"]["ConcurrentExecutions"])
        result.unreserved = int(settings["AccountLimit"]["UnreservedConcurrentExecutions"])
    except Exception as exc:  # botocore's ClientError, NoCredentialsError, EndpointConnectionError ...
        result.errors.append(f"lambda:GetAccountSettings failed: {exc}")
    try:
        quota = quotas_client.get_service_quota(ServiceCode="lambda", QuotaCode=QUOTA_CODE)
        result.quota = int(quota["Quota"]["Value"])
    except Exception as exc:
        result.errors.append(f"servicequotas:GetServiceQuota (lambda {QUOTA_CODE}) failed: {exc}")
    available = result.unreserved if result.unreserved is not None else result.account_limit
    if available is None:
        available = result.quota
    if available is None:
        return result
    raise_it = (
        f"ask for more (Service Quotas, Lambda, 'Concurrent executions', {QUOTA_CODE}) or deploy with "
        f"-c throttle_rate={max(1, int(available / seconds_per_request))} "
        f"-c throttle_burst={max(1, int(available))}"
    )
    if available < result.needed:
        result.warnings.append(
            f"{region}: {available} concurrent Lambda executions are available, but the stage admits {rate} "
            f"requests/s, which at {seconds_per_request:g} s each needs about {result.needed}: requests past "
            f"{available} in flight get 429s; {raise_it}"
        )
    elif available < burst:
        result.warnings.append(
            f"{region}: {available} concurrent Lambda executions are available, under the stage's burst of {burst}: "
            f"a full burst gets 429s past {available}; {raise_it}"
        )
    if result.account_limit is not None and result.account_limit <= UNRESERVED_MINIMUM:
        result.warnings.append(
            f"{region}: the account's concurrency is {result.account_limit}: no function can reserve any "
            f"(Lambda keeps {UNRESERVED_MINIMUM} unreserved); a new account's quota must be raised first"
        )
    return result


def render_text(result: Precheck) -> str:
    lines = [
        f"region {result.region}: throttle {result.throttle_rate}/s (burst {result.throttle_burst}), "
        f"about {result.needed} concurrent executions needed at {result.seconds_per_request:g} s a request",
        f"  account concurrency in force: {_n(result.account_limit)} (unreserved {_n(result.unreserved)}); "
        f"quota {QUOTA_CODE}: {_n(result.quota)}",
    ]
    lines += [f"  warning: {w}" for w in result.warnings]
    lines += [f"  could not read: {e}" for e in result.errors]
    if result.status == 0:
        lines.append("  ok: the account carries the stage's throttle")
    return "\n".join(lines)


def _n(value: int | None) -> str:
    return "unknown" if value is None else str(value)


def cmd_precheck(args: argparse.Namespace) -> None:
    import boto3  # the 'aws' extra

    session = boto3.session.Session(region_name=args.region) if args.region else boto3.session.Session()
    region = session.region_name or "us-east-1"
    result = check(
        lambda_client=session.client("lambda", region_name=region),
        quotas_client=session.client("service-quotas", region_name=region),
        region=region,
        rate=args.throttle_rate,
        burst=args.throttle_burst,
        seconds_per_request=args.seconds_per_request,
    )
    print(json.dumps({**asdict(result), "status": result.status}, indent=2) if args.json else render_text(result))
    raise SystemExit(result.status)


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
        return value

    return parse


def register(sub: Any) -> None:
    """``capsule cloud precheck`` on the ``cloud`` command's subparsers."""
    p = sub.add_parser("precheck", help="warn when the account's Lambda concurrency is below the stage's throttle")
    p.add_argument("--region", default=None, help="the deployment's region (default: the AWS configuration's)")
    p.add_argument(
        "--throttle-rate",
        type=_positive(int),
        default=DEFAULT_RATE,
        help="the -c throttle_rate the stack is deployed with",
    )
    p.add_argument(
        "--throttle-burst",
        type=_positive(int),
        default=DEFAULT_BURST,
        help="the -c throttle_burst the stack is deployed with",
    )
    p.add_argument(
        "--seconds-per-request",
        type=_positive(float),
        default=DEFAULT_SECONDS,
        help="a request's average duration, for the concurrency the rate needs",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=cmd_precheck)
