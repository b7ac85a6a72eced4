"""GET /v1/scopes/principals: the tenant's IAM principal ARN patterns and the scope each grants."""

from capsule.store.scopes import scope_settings
from functions import app, scopes


def principal_scopes() -> scopes.PrincipalScopesResult:
    rules = scope_settings(app.service().store).principal_rules(app.tenant())
    parsed = [scopes.PrincipalRule.model_validate(rule) for rule in rules]
    text = (
        f"{len(parsed)} rule{'s' if len(parsed) != 1 else ''}, first match wins; a principal no rule matches "
        "has the tenant's full access."
    )
    return scopes.PrincipalScopesResult(rules=parsed, explanation=text)


ENDPOINT = app.Endpoint(
    "principal_scopes", principal_scopes, summary="The tenant's principal scopes (SigV4)", errors=(401, 500, 503)
)
handler = app.make_handler(ENDPOINT)
