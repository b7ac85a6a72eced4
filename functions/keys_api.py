"""The local gateway's named API keys over HTTP, for the console: what ``capsule keys list``,
``create`` and ``revoke`` do.

    GET    /v1/keys          the keys (names, tenants, when made, scopes; never a key or its hash)
    POST   /v1/keys          {"name", "tenant"?, "scopes"?} -> the new key, shown this once
    DELETE /v1/keys/{name}   revoke: requests with it get 401 from then on

``scopes`` is the scope object a principal rule of ``PUT /v1/scopes/principals`` takes
(functions.scopes.KeyScope: ``access``, ``projects``, ``subjects``, ``sees``; left out, the
tenant's full access), checked strictly before anything is written: a bad one is a 422 naming
its field (``scopes.access``, ``scopes.projects``, ...) and no key is made. Each listed key
carries its ``scope`` (every field, defaults included) and ``scope_text`` (what ``capsule keys
list`` prints).

The gateway answers these itself, beside the route table: the keys live in its data folder
(:class:`functions.credentials.Credentials`), and a hosted deployment keeps its keys in Secrets
Manager, so there is no Lambda for infra/ to deploy. Only the gateway's own token may manage
keys: a named key can neither mint more keys nor revoke others (403). They are not in the OpenAPI
document, which describes the route table's API (hosted and local alike).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from capsule.core.errors import CapsuleError, Forbidden, InvalidInput, MalformedBody, PayloadTooLarge
from capsule.core.fielderrors import suggestion

from . import body as bodies
from .auth import HttpRequest
from .credentials import LOCAL_TENANT, Credentials

if TYPE_CHECKING:
    from .scopes import KeyScope

PATH = "/v1/keys"
CREATE_FIELDS = ("name", "tenant", "scopes")
MAX_BODY = 4096  # a name, a tenant and a scope (a few project patterns and subjects)
TOKEN_NAME = "token"  # the Bearer name of the gateway's own token (Credentials.bearers)


def owns(path: str) -> bool:
    return path == PATH or path.startswith(PATH + "/")


def methods(path: str) -> list[str]:
    return ["GET", "POST"] if path == PATH else ["DELETE"]


def handle(request: HttpRequest, credentials: Credentials, authorize: Callable[[], dict[str, Any]]) -> tuple[int, Any]:
    """(status, payload) for a request :func:`owns` with one of its :func:`methods`; raises
    CapsuleError for a refusal (nothing changed)."""
    path = request.raw_path
    caller = (authorize().get("lambda") or {}).get("key")
    if caller != TOKEN_NAME:
        raise Forbidden("API keys are managed with the gateway's own token (capsule keys token), not with a named key")
    if request.method == "GET":
        keys = [_with_scope(k) for k in credentials.list_keys()]
        return 200, {
            "keys": keys,
            "explanation": f"{len(keys)} API key(s) of this gateway; the keys themselves "
            "are never shown again, only their hashes are kept.",
        }
    if request.method == "POST":
        name, tenant, scope = _create_body(request.body)
        key = credentials.create_key(name, tenant, scope.plain())
        made = next((k for k in credentials.list_keys() if k.get("name") == name), {"name": name, "tenant": tenant})
        created = _with_scope(made)
        return 201, {
            **created,
            "key": key,
            "explanation": f"API key {name!r} for tenant {tenant!r}, scope: {created['scope_text']}; shown this "
            "once, only its hash is kept. Send it as 'Authorization: Bearer <key>'.",
        }
    name = unquote(path[len(PATH) + 1 :])
    credentials.revoke_key(name)
    return 200, {"revoked": name, "explanation": f"Revoked API key {name!r}; requests with it now get 401."}


def _with_scope(key: dict[str, Any]) -> dict[str, Any]:
    """A listed key with its whole scope and the line ``capsule keys list`` prints for it."""
    from . import scopes  # pydantic: loaded only when keys are listed or made, never on a warm route

    stored = key.get("scope") or {}
    try:
        scope = scopes.parse_scope(stored)
    except CapsuleError:  # a stored scope that no longer parses reaches nothing (scopes.caller_reach)
        return {**key, "scope": stored, "scope_text": "unreadable scope: reaches nothing"}
    return {**key, "scope": scope.model_dump(), "scope_text": scopes.describe(scope)}


def _create_body(body: bytes) -> tuple[str, str, KeyScope]:
    if len(body) > MAX_BODY:
        raise PayloadTooLarge(f"the body is {len(body)} bytes; the limit here is {MAX_BODY} bytes", field="body")
    try:
        data = bodies.decode(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MalformedBody(f"body: not JSON ({exc})") from None
    refused = bodies.shape_error(data)
    if refused is not None:
        raise refused
    if not isinstance(data, dict):
        raise InvalidInput('body: a JSON object {"name": ..., "tenant": ...}', field="body")
    for key in data:
        if key not in CREATE_FIELDS:
            raise InvalidInput(f"unknown field {key!r}{suggestion(key, CREATE_FIELDS)}", field=key)
    name, tenant = data.get("name"), data.get("tenant", LOCAL_TENANT)
    if not isinstance(name, str):
        raise InvalidInput("name: required, a string", field="name")
    if not isinstance(tenant, str):
        raise InvalidInput("tenant: a string", field="tenant")
    from .scopes import parse_scope

    # checked whole before the key is made (Credentials.create_key checks it again): all or nothing
    scope = parse_scope(data.get("scopes", {}), field="scopes")
    return name, tenant, scope
