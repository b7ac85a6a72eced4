"""Settings for the hosted functions: the environment, plus the deployment's one secret.

The CDK app puts only the secret's ARN in the environment (``CAPSULE_SECRET_ARN``); the
values (``mongodb_uri``, ``voyage_api_key``, ``openai_api_key``) are read at run time through
Powertools Parameters, which caches them for ``POWERTOOLS_PARAMETERS_MAX_AGE`` seconds, so
they never appear in plain text in the function's configuration.
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

Fetch = Callable[[str], Mapping[str, Any]]


def fetch_secret(arn: str, *, boto3_client: Any = None, max_age_s: int | None = None) -> Mapping[str, Any]:
    """The secret's JSON object, cached by Powertools for ``max_age_s``."""
    from aws_lambda_powertools.utilities import parameters

    provider = parameters.SecretsProvider(boto3_client=boto3_client) if boto3_client else None
    max_age = max_age_s or int(os.environ.get("POWERTOOLS_PARAMETERS_MAX_AGE", DEFAULT_MAX_AGE_S))
    try:
        if provider is not None:
            value = provider.get(arn, transform="json", max_age=max_age)
        else:
            value = parameters.get_secret(arn, transform="json", max_age=max_age)
    except parameters.exceptions.GetParameterError as exc:
        raise Unavailable(f"cannot read the deployment's secret: {exc}") from exc
    except parameters.exceptions.TransformParameterError as exc:
        raise Unavailable("the deployment's secret is not a JSON object") from exc
    if not isinstance(value, Mapping):
        raise Unavailable("the deployment's secret is not a JSON object")
    return value


def load_settings(environ: Mapping[str, str] | None = None, *, fetch: Fetch = fetch_secret) -> Settings:
    """``Settings.from_env``, with the secret's non-empty values when ``CAPSULE_SECRET_ARN`` is set."""
    environ = os.environ if environ is None else environ
    arn = environ.get(SECRET_ARN_VARIABLE, "")
    if not arn:
        return Settings.from_env(environ)
    secret = fetch(arn)
    overrides = {key: secret[key] for key in SECRET_KEYS if isinstance(secret.get(key), str) and secret[key]}
    return Settings.from_env(environ, **overrides)
