"""POST /v1/solutions/import?source=NAME (issue 30): the answer names where the fixpack came from,
as ``capsule solutions import FILE`` does embedded, so the command can ask a running server. The
parameter is declared in the OpenAPI document like the other routes' query parameters, checked
like them, and an unknown one is still refused."""

from functions import openapi
from tests.learning.fixpack_files import FILES

from .events import event


def test_source_is_named_in_the_explanation(service, call):
    path = FILES[1]
    imported = call(event("solution_import", raw_body=path.read_text("utf-8"), query={"source": path.name}))
    assert imported.status == 200, imported
    assert f"' from {path.name} as new solution {imported.json['solution']['id']}." in imported.json["explanation"]
    again = call(event("solution_import", raw_body=path.read_text("utf-8")))  # no source: none named
    assert again.status == 200 and " from " not in again.json["explanation"].split(":")[0], again.json
    assert "replaced its content, kept its counts." in again.json["explanation"]


def test_a_bad_or_unknown_parameter_is_refused_and_imports_nothing(service, call):
    body = FILES[1].read_text("utf-8")
    for query, field in (
        ({"source": "a\nb"}, "source"),
        ({"source": "x" * 256}, "source"),
        ({"sourse": "f.json"}, "sourse"),
    ):
        refused = call(event("solution_import", raw_body=body, query=query))
        assert refused.status == 422, refused
        assert refused.json["error"]["details"][0]["field"] == field, refused.json
    assert "did you mean 'source'" in refused.json["error"]["message"]
    assert call(event("solution_list")).json["solutions"] == []


def test_the_parameter_is_in_the_openapi_document():
    operation = openapi.document()["paths"]["/v1/solutions/import"]["post"]
    (parameter,) = [p for p in operation["parameters"] if p["in"] == "query"]
    assert parameter["name"] == "source" and not parameter.get("required")
    (text,) = [s for s in parameter["schema"]["anyOf"] if s.get("type") == "string"]  # as solution_list's
    assert text["maxLength"] == 255 and text["pattern"] and "description" in parameter
    assert operation["x-capsule-rules"]  # the body's rules stay stated beside it
