"""Which credentials a remote connection sends, decided from the URL alone unless told.

The first Capsule's bridge had one setting, ``CAPSULE_MEMORY_URL``; it must keep working by
itself. So, unless ``--auth`` / ``CAPSULE_AUTH`` names a method:

| the URL's host                                  | sends                                          |
| ----------------------------------------------- | ---------------------------------------------- |
| ``*.execute-api.<region>.amazonaws.com``        | SigV4 (service execute-api, region from host)  |
| any host, with ``--region`` or ``--profile``    | SigV4 (those options exist only for it)        |
| loopback (``127.0.0.0/8``, ``::1``, localhost)  | an API key if one is set, else the token file  |
|                                                 | of the ``capsule serve`` on this machine       |
| any other host                                  | an API key (``CAPSULE_API_KEY``, key file)     |

A missing credential is not an error when the connection is opened: the MCP server starts,
and every call answers with what to set (:class:`mcp_client.auth.LazyAuth`), picking the
credential up once it exists.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from capsule.core.errors import InvalidInput, Unauthorized
from capsule.core.paths import default_data_dir

from .auth import BearerAuth, region_from_url
from .auth_methods import AUTO, METHODS


@dataclass(frozen=True)
class AuthChoice:
    method: str  # sigv4 | apikey | none
    reason: str  # why, for logs and error messages


def check_method(method: str | None) -> str:
    """``method`` if it is one we know (None is auto); else an error naming the nearest."""
    if method in (None, ""):
        return AUTO
    if method not in METHODS:
        near = difflib.get_close_matches(method.lower(), METHODS, n=1, cutoff=0.4)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise InvalidInput(f"unknown auth method {method!r}{hint}: use one of {', '.join(METHODS)}", field="auth")
    return method


def is_loopback(host: str) -> bool:
    """A host on this machine: a ``capsule serve`` here, whose token file we can read."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def choose_auth(url: str, method: str | None = None, *, sigv4_options: bool = False) -> AuthChoice:
    """The method for ``url``: the one named, else the table in this module's docstring."""
    method = check_method(method)
    if method != AUTO:
        return AuthChoice(method, f"--auth/CAPSULE_AUTH is {method!r}")
    host = urlsplit(url).hostname or ""
    if region_from_url(url):
        return AuthChoice("sigv4", f"{host} is an API Gateway (execute-api) host")
    if sigv4_options:
        return AuthChoice("sigv4", "--region or --profile was given")
    if is_loopback(host):
        return AuthChoice("apikey", f"{host} is this machine: an API key, else capsule serve's token")
    return AuthChoice("apikey", f"{host} is not an execute-api host")


def token_path(data_dir: str | Path | None, environ: Mapping[str, str]) -> Path:
    """Where ``capsule serve`` keeps its token for this data folder (functions.credentials)."""
    from functions.credentials import Credentials  # the one place the file's name is kept

    folder = data_dir or environ.get("CAPSULE_DATA_DIR") or default_data_dir()
    return Credentials(Path(folder).expanduser()).token_path


def bearer_for(
    url: str,
    *,
    key_file: str | Path | None = None,
    data_dir: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> BearerAuth:
    """An API key (``--api-key-file``, ``CAPSULE_API_KEY``, ``CAPSULE_API_KEY_FILE``), else, for a
    loopback host, the local server's token; else an error saying what to set."""
    environ = os.environ if environ is None else environ
    if key_file or environ.get("CAPSULE_API_KEY") or environ.get("CAPSULE_API_KEY_FILE"):
        return BearerAuth.from_env(environ, key_file)
    wanted = "set CAPSULE_API_KEY (or CAPSULE_API_KEY_FILE, or pass --api-key-file)"
    if is_loopback(urlsplit(url).hostname or ""):
        path = token_path(data_dir, environ)
        try:
            return BearerAuth(path.read_text("utf-8"), source=f"the token in {path}")
        except (OSError, InvalidInput):
            raise Unauthorized(
                f"no credentials for {url}: {wanted}; or, for the capsule serve on this machine, its token file "
                f"{path} was not found: start capsule serve, or point CAPSULE_DATA_DIR (--data-dir) at its "
                "data folder"
            ) from None
    raise Unauthorized(
        f"no credentials for {url}: {wanted}; for an API Gateway with IAM auth, pass --auth sigv4 (and --region)"
    )


__all__ = ["AUTO", "METHODS", "AuthChoice", "bearer_for", "check_method", "choose_auth", "is_loopback", "token_path"]
