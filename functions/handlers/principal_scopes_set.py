"""PUT /v1/scopes/principals: map IAM principal ARN patterns to scopes (SigV4 callers)."""

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body

from functions import app, scopes


def principal_scopes_set(request: Annotated[scopes.PrincipalScopesRequest, Body()]) -> scopes.PrincipalScopesResult:
    refused = scopes.lockout(request.rules, scopes.current_principal())
    if refused is not None:
        raise refused
    service = app.service()
    from capsule.store.scopes import scope_settings

    scope_settings(service.store).set_principal_rules(
        app.tenant(),
        [r.model_dump(exclude_defaults=True) | {"scope": r.scope.plain()} for r in request.rules],
        at=service.clock(),
    )
    scopes.forget_rules(app.tenant())
    text = (
        f"The tenant now has {len(request.rules)} principal scope rule{'s' if len(request.rules) != 1 else ''}; "
        f"a SigV4 caller gets the first whose pattern matches its ARN (within {scopes.RULES_TTL_S:g} seconds "
        "everywhere), and full access when none does."
    )
    return scopes.PrincipalScopesResult(rules=request.rules, explanation=text)


ENDPOINT = app.Endpoint(
    "principal_scopes_set",
    principal_scopes_set,
    summary="Set the tenant's principal scopes (IAM principal ARN pattern -> scope)",
    errors=(401, 409, 413, 422, 500, 503),
)
handler = app.make_handler(ENDPOINT)
