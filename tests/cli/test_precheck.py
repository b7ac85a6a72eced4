"""``capsule cloud precheck``: the account's Lambda concurrency read before a deploy and compared
with what the stage's throttle admits; botocore's Stubber gives the accounts moto cannot (it does
not implement GetAccountSettings, nor Service Quotas for Lambda), moto the failures as AWS
answers them."""

from __future__ import annotations

import pytest

from tests.support.moto_aws import mocked_aws

boto3 = pytest.importorskip("boto3", reason="boto3 is in the 'aws' extra")
from botocore.stub import Stubber  # noqa: E402

from capsule_cli import precheck  # noqa: E402

REGION = "eu-west-1"


def _clients(limit: int | None, unreserved: int | None, quota: int | None):
    lam = boto3.client("lambda", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    sq = boto3.client("service-quotas", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    ls, qs = Stubber(lam), Stubber(sq)
    if limit is None:
        ls.add_client_error("get_account_settings", "AccessDeniedException", "not allowed", 403)
    else:
        ls.add_response(
            "get_account_settings",
            {
                "AccountLimit": {
                    "TotalCodeSize": 80530636800,
                    "CodeSizeUnzipped": 262144000,
                    "CodeSizeZipped": 52428800,
                    "ConcurrentExecutions": limit,
                    "UnreservedConcurrentExecutions": unreserved,
                },
                "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": 0},
            },
        )
    if quota is None:
        qs.add_client_error("get_service_quota", "AccessDeniedException", "not allowed", 403)
    else:
        qs.add_response(
            "get_service_quota",
            {"Quota": {"ServiceCode": "lambda", "QuotaCode": precheck.QUOTA_CODE, "Value": float(quota)}},
            {"ServiceCode": "lambda", "QuotaCode": precheck.QUOTA_CODE},
        )
    ls.activate()
    qs.activate()
    return lam, sq


def test_a_new_accounts_concurrency_of_10_warns_and_says_what_to_do():
    lam, sq = _clients(10, 10, 10)
    result = precheck.check(lambda_client=lam, quotas_client=sq, region=REGION)
    assert result.status == 1 and result.needed == 100
    assert any("10 concurrent Lambda executions" in w and "L-B99A9384" in w for w in result.warnings)
    assert any("throttle_rate=20" in w for w in result.warnings)  # what 10 executions carry at 0.5 s
    assert any("no function can reserve" in w for w in result.warnings)
    assert "warning:" in precheck.render_text(result)


def test_a_default_account_carries_the_default_throttle():
    lam, sq = _clients(1000, 1000, 1000)
    result = precheck.check(lambda_client=lam, quotas_client=sq, region=REGION)
    assert result.status == 0 and result.warnings == [] and result.errors == []
    assert "ok:" in precheck.render_text(result)


def test_a_burst_above_the_concurrency_warns():
    lam, sq = _clients(300, 300, 300)
    result = precheck.check(lambda_client=lam, quotas_client=sq, region=REGION, rate=200, burst=400)
    assert result.status == 1 and "burst of 400" in result.warnings[0]


def test_one_api_refused_uses_the_other_and_says_so():
    lam, sq = _clients(None, None, 50)
    result = precheck.check(lambda_client=lam, quotas_client=sq, region=REGION)
    assert result.quota == 50 and result.status == 1
    assert any("GetAccountSettings" in e for e in result.errors)


def test_nothing_readable_is_status_2():
    lam, sq = _clients(None, None, None)
    result = precheck.check(lambda_client=lam, quotas_client=sq, region=REGION)
    assert result.status == 2 and len(result.errors) == 2


def test_against_moto_the_failures_are_reported_not_raised(monkeypatch):
    with mocked_aws(monkeypatch, REGION):
        result = precheck.check(
            lambda_client=boto3.client("lambda", region_name=REGION),
            quotas_client=boto3.client("service-quotas", region_name=REGION),
            region=REGION,
        )
    assert result.status == 2
    assert any("NoSuchResource" in e for e in result.errors)


def test_the_command_is_wired_and_exits_with_the_status(monkeypatch, capsys):
    import argparse
    import json

    from capsule_cli import cloud

    lam, sq = _clients(10, 10, 10)
    monkeypatch.setattr(boto3.session.Session, "client", lambda self, name, **kw: lam if name == "lambda" else sq)
    parser = argparse.ArgumentParser()
    cloud.register(parser.add_subparsers())
    args = parser.parse_args(["cloud", "precheck", "--region", REGION, "--throttle-rate", "50", "--json"])
    assert args.run is precheck.cmd_precheck
    with pytest.raises(SystemExit) as exited:
        args.run(args)
    assert exited.value.code == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["needed"] == 25 and printed["status"] == 1 and printed["account_limit"] == 10
    with pytest.raises(SystemExit):
        parser.parse_args(["cloud", "precheck", "--throttle-rate", "0"])
