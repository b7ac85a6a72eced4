"""GET /v1/scopes/me: the caller's tenant and scope, as the server enforces it."""

from functions import app, scopes


def whoami() -> scopes.CallerScope:
    reach = app.reach()
    # Built as it is enforced, without validation: a key whose stored scope no longer parses
    # reaches nothing (no projects), which a scope one could set cannot say.
    scope = scopes.KeyScope.model_construct(
        access=reach.access,
        projects=None if reach.projects is None else list(reach.projects),
        subjects=None if reach.subjects is None else list(reach.subjects),
        sees=reach.sees,
    )
    who = scopes.current_principal() or reach.who
    return scopes.CallerScope(
        tenant=app.tenant(),
        who=who,
        scope=scope,
        explanation=f"{who} has {scopes.describe(scope)} access to tenant {app.tenant()!r}.",
    )


ENDPOINT = app.Endpoint("whoami", whoami, summary="The caller's scope", errors=(401, 500, 503))
handler = app.make_handler(ENDPOINT)
