"""Settings for the hosted functions: the environment, plus the deployment's one secret.

The CDK app puts only the secret's ARN in the environment (``CAPSULE_SECRET_ARN``); the
values (``mongodb_uri``, ``voyage_api_key``, ``openai_api_key``) are read at run time through
Powertools Parameters, which caches them for ``POWERTOOLS_PARAMETERS_MAX_AGE`` seconds, so
they never appear in plain text in the function's configuration. A warm container reads the
secret again once that age has passed (:func:`functions.app.service`), so a rotated value is in
use within it. Secrets Manager is asked with bounded timeouts (:data:`SECRETS_CLIENT`): boto3's
defaults (60 s to connect, 60 s to read) outlast the request that reads the secret at a cold start.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from capsule.config import Settings
from capsule.core.errors import Unavailable

SECRET_ARN_VARIABLE = "CAPSULE_SECRET_ARN"
SECRET_KEYS = ("mongodb_uri", "voyage_api_key", "openai_api_key")
DEFAULT_MAX_AGE_S = 300
# Three attempts of at most 1 + 2 s: within a cold request's budget, where boto3's defaults are not.
SECRETS_CLIENT = {"connect_timeout": 1, "read_timeout": 2, "retries": {"total_max_attempts": 3, "mode": "standard"}}

Fetch = Callable[[str], Mapping[str, Any]]


def fetch_secret(arn: str, *, boto3_client: Any = None, max_age_s: int | None = None) -> Mapping[str, Any]:
    """The secret's JSON object, cached by Powertools for ``max_age_s``."""
    from aws_lambda_powertools.utilities import parameters

    provider = _provider(boto3_client)
    try:
        value = provider.get(arn, transform="json", max_age=max_age_s or max_age())
    except parameters.exceptions.GetParameterError as exc:
        raise Unavailable(f"cannot read the deployment's secret: {exc}") from exc
    except parameters.exceptions.TransformParameterError as exc:
        raise Unavailable("the deployment's secret is not a JSON object") from exc
    if not isinstance(value, Mapping):
        raise Unavailable("the deployment's secret is not a JSON object")
    return value


def max_age() -> int:
    return int(os.environ.get("POWERTOOLS_PARAMETERS_MAX_AGE", DEFAULT_MAX_AGE_S))


_PROVIDER: Any = None  # the container's provider: its cache is what max_age refers to


def _provider(boto3_client: Any = None) -> Any:
    from aws_lambda_powertools.utilities import parameters

    if boto3_client is not None:
        return parameters.SecretsProvider(boto3_client=boto3_client)
    global _PROVIDER
    if _PROVIDER is None:
        from botocore.config import Config

        _PROVIDER = parameters.SecretsProvider(boto_config=Config(**SECRETS_CLIENT))
    return _PROVIDER


def secret_arn(environ: Mapping[str, str] | None = None) -> str:
    return (os.environ if environ is None else environ).get(SECRET_ARN_VARIABLE, "")


def load_settings(environ: Mapping[str, str] | None = None, *, fetch: Fetch = fetch_secret) -> Settings:
    """``Settings.from_env``, with the secret's non-empty values when ``CAPSULE_SECRET_ARN`` is set."""
    environ = os.environ if environ is None else environ
    arn = secret_arn(environ)
    if not arn:
        return Settings.from_env(environ)
    secret = fetch(arn)
    overrides = {key: secret[key] for key in SECRET_KEYS if isinstance(secret.get(key), str) and secret[key]}
    return Settings.from_env(environ, **overrides)
